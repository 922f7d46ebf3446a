"""`python -m helpers.compare OLD.json NEW.json --gate RULE ...`: see `helpers.compare.gates`."""

import sys

from helpers.compare.gates import main

sys.exit(main())
