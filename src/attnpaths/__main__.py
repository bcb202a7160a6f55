"""``python -m attnpaths``: the book's command line (see :mod:`attnpaths.book.cli`)."""

import sys

from attnpaths.book.cli import main

if __name__ == "__main__":
    sys.exit(main())
