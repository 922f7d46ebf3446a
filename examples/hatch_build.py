"""Ship the repository's `helpers` package in this distribution's wheel, beside `walkthroughs`.

`helpers` lives at the repository root (one folder per package, as the layout shows), outside this
project's folder. A `force-include` in pyproject.toml would also copy it into an editable install,
where edits to `helpers/` would then go unseen; the checkout's editable install already finds it at
the root. So only a standard wheel gets it, added here.
"""

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class HelpersInWheel(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "wheel" and version == "standard":
            build_data["force_include"][str(Path(self.root).parent / "helpers")] = "helpers"
