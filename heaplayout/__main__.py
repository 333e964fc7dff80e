"""python3 -m heaplayout: the same command line as `heaplayout` (heaplayout/cli.py)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
