"""``python -m mlmpi info`` and ``python -m mlmpi script.py``: see :mod:`mlmpi.cli`."""

import sys

from .cli import main

sys.exit(main())
