"""``python -m fakefs.selftest``: standalone use, and the inner stage (``--inner CONFIG``)."""

import sys

from .command import main

sys.exit(main())
