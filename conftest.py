"""Every test runs offline: replay mode, for this process and the notebook kernels it starts.

At the root so it also applies to `pytest --nbval examples/notebooks` run alone.
"""

import os

from helpers.mode import OFFLINE_ENV

os.environ.update(OFFLINE_ENV)
