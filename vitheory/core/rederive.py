"""What the packages' re-derivation checks share (`vitheory.<paper>.rederive`): each check recomputes
values a stage stored from other raw artifacts of the same run (a checkpoint evaluated again, a logged
series, a fit of the per-run tables) under a repository root and returns a `Problem` for every
value that does not follow. Stages store no summary statistic: the claims compute those, once."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vitheory.core.paths import stage_of


@dataclass(frozen=True)
class Problem:
    """One inconsistency that verify reports: the artifact it is about (None when it is about none), kept
    apart from its one line of text so that no reader parses the line for it."""

    path: Path | None
    text: str


def same(a: Any, b: Any) -> bool:
    """Equal structures, floats equal to 1e-9 relative (JSON keeps them exactly; this allows for
    a different summation order on another machine); NaN equals NaN (a diverged run's loss, reproduced)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and (
            math.isclose(a, b, rel_tol=1e-9) or math.isnan(a) and math.isnan(b))
    return a == b


def differs(path: Path, what: str) -> list[Problem]:
    """A stored value that its own raw artifacts do not reproduce: only rerunning its stage mends it."""
    return [Problem(path, f"{path}: {what}; run `dvc repro -f {stage_of(path)}` to rebuild it")]


def agrees(derived: dict[str, Any], stored: dict[str, Any], path: Path, what: str) -> list[Problem]:
    """No problem when `derived` equals the same keys of `stored`; else `differs`."""
    return [] if same(derived, {k: stored.get(k) for k in derived}) else differs(path, what)

