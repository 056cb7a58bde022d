"""``python -m mlmpi info``: see :mod:`mlmpi.cli`."""

import sys

from .cli import main

sys.exit(main())
