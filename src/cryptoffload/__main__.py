"""`python -m cryptoffload`: the same as the `cryptoffload` command."""

import sys

from cryptoffload.cli import main

sys.exit(main())
