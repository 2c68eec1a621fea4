"""`python -m cryptoffload`: the same as the `cryptoffload` command."""

import sys

from cryptoffload.tools.cli import main

sys.exit(main())
