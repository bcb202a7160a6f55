"""``python -m attnpaths_book``: the package's command line (see :mod:`attnpaths_book.cli`)."""

import sys

from attnpaths_book.launcher import main

if __name__ == "__main__":
    sys.exit(main())
