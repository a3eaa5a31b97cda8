"""What a controller can see (docs/design.md, "What a real controller can see"): ``all`` every
pool at every tick; ``current`` the pool the job runs in; ``probe`` that plus what launch
requests teach (the mode every claim is made in)."""

from __future__ import annotations

from typing import Literal

ObserveMode = Literal["all", "current", "probe"]
OBSERVE_MODES: tuple[ObserveMode, ...] = ("all", "current", "probe")
