"""``python -m roofkit``: the command line, as the ``roofkit`` script."""

import sys

from .cli import main

sys.exit(main())
