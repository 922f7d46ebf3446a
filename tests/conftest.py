"""Every test runs offline: replay mode, for this process and the notebook kernels it starts."""

import os

from helpers.mode import OFFLINE_ENV

os.environ.update(OFFLINE_ENV)
