"""`python -m cryptoffload`: the same as the `cryptoffload` command."""

import sys

if sys.argv[1:2] == ["run"]:  # a program's wrapper: start it without loading the other commands
    from cryptoffload.tools.run import main as run_main

    sys.exit(run_main(sys.argv[2:]))

from cryptoffload.tools.cli import main

sys.exit(main())
