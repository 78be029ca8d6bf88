"""``python -m fakefs.bench [NAME...]`` (``make bench``)."""

import sys

from . import main

sys.exit(main())
