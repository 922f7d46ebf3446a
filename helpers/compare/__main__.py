"""`python -m helpers.compare OLD NEW --gate RULE ...`: see `helpers.compare.cli`."""

import sys

from helpers.compare.cli import main

sys.exit(main())
