"""``python -m attnpaths``: the package's command line (see :mod:`attnpaths.cli`)."""

import sys

from attnpaths.cli import main

if __name__ == "__main__":
    sys.exit(main())
