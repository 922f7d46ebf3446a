import sys

from helpers.report.cli import main

sys.exit(main())
