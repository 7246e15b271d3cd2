"""A criterion on a measured quantity and its verdict: holds, does not hold, or inconclusive.

`Criterion` says what must hold of one quantity (operator, threshold and where the threshold comes from);
`decide` gives its verdict from the point value and the interval its kind's method made
(vitheory.core.intervals). The claims (vitheory.core.claims) and their seed plans
(vitheory.core.planning) both decide through `decide`, so a plan counts exactly the verdicts the report
would give.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Literal

from vitheory.core.intervals import GROUPED, METHODS, PAIRED, UNBOUNDED, Interval, IntervalSettings

OPERATORS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}
HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"
THRESHOLD_SOURCES = ("paper: ", "ours: ")


@dataclass(frozen=True)
class Criterion:
    """`measured[quantity] <op> threshold` must hold. `source` says where the threshold comes from:
    "paper: " and the theorem, figure or sentence it operationalises, or "ours: " and why we chose it
    (a reviewer must never read a threshold of ours as the paper's). `kind` (a key of `METHODS`) chooses
    the interval; `group` names the units a share, median or paired quantity is taken over; `bounds` is the
    quantity's range, which its interval never leaves. A `smallest_effect` (with its own source) lets an
    interval lying wholly within it of the threshold decide "does not hold". A `premise` is a claim's
    condition that the paper's theorem assumes (its source is the paper): where it fails, the claim is
    outside the theorem's domain, which the atlas reads apart from an inconclusive point."""

    quantity: str
    op: Literal[">=", "<=", ">", "<"]
    threshold: float
    source: str
    kind: str
    group: str | None = None
    bounds: tuple[float, float] = UNBOUNDED
    smallest_effect: float | None = None
    smallest_effect_source: str = ""
    premise: bool = False

    def __post_init__(self) -> None:
        if not self.source.startswith(THRESHOLD_SOURCES) or not self.source.partition(": ")[2].strip():
            raise ValueError(f"criterion {self}: its source must say 'paper: <where>' or 'ours: <why>', "
                             f"not {self.source!r}")
        if self.kind not in METHODS:
            raise ValueError(f"criterion {self}: kind {self.kind!r} is none of {sorted(METHODS)}")
        if (self.kind in GROUPED) != (self.group is not None):
            raise ValueError(f"criterion {self}: a {self.kind} quantity "
                             + ("names the group of units it is taken over" if self.group is None else "takes no group"))
        if self.premise and self.origin != "paper":
            raise ValueError(f"criterion {self}: a premise is the paper's: its source says 'paper: <where>'")
        if self.smallest_effect is not None and not (
                self.smallest_effect > 0 and self.smallest_effect_source.startswith(THRESHOLD_SOURCES)):
            raise ValueError(f"criterion {self}: a smallest effect is positive and names its source")

    @property
    def origin(self) -> str:
        """Whose threshold it is: "paper" or "ours", as its source declares (claims.json records it apart)."""
        return self.source.partition(": ")[0]

    def holds(self, value: float | None) -> bool:
        """False when the quantity could not be measured (None), e.g. a fit with too few points. A value
        within rounding (1e-9) of the threshold counts as equal to it: a difference of equal means that
        floating point leaves at 1e-16 does not pass `> 0`."""
        if value is None:
            return False
        tolerance = 1e-9 * max(1.0, abs(self.threshold))
        if abs(value - self.threshold) <= tolerance:
            value = self.threshold
        return bool(OPERATORS[self.op](value, self.threshold))

    def margin(self, value: float | None) -> float | None:
        """How far `value` lies on the holding side of the threshold (negative: the other side)."""
        if value is None:
            return None
        return value - self.threshold if self.op in (">=", ">") else self.threshold - value

    def verdict(self, value: float | None, interval: tuple[float | None, float | None]) -> str:
        """HOLDS or FAILS when the point value and its whole interval agree, else INCONCLUSIVE (also when
        the quantity could not be measured); FAILS too when the interval lies wholly within the smallest
        effect of interest of the threshold."""
        ends = (value, *interval)
        if None in ends:
            return INCONCLUSIVE
        if all(self.holds(end) for end in ends):
            return HOLDS
        if not any(self.holds(end) for end in ends) or self.negligible(interval):
            return FAILS
        return INCONCLUSIVE

    def negligible(self, interval: tuple[float | None, float | None]) -> bool:
        """The interval lies wholly within the smallest effect of interest of the threshold."""
        low, high = interval
        return (self.smallest_effect is not None and low is not None
                and self.threshold - self.smallest_effect <= low and high <= self.threshold + self.smallest_effect)

    def __str__(self) -> str:
        return f"{self.quantity} {self.op} {self.threshold:g}"


def decide(c: Criterion, value: float | None, interval: Interval, cfg: IntervalSettings) -> str:
    """The criterion's verdict. A paired direction is decided by its sign-flip p-values, not by its interval:
    it holds when the test rejects the other side (one-sided p at most the interval's tail, the point value
    on the holding side), does not hold when the test rejects the holding side (or its interval lies within
    a smallest effect of interest); the interval decides only where no test could run (a seed unmeasured)."""
    if c.kind != PAIRED or interval.p_values is None:
        return c.verdict(value, interval.ends)
    greater, smaller = interval.p_values
    holding, other = (greater, smaller) if c.op in (">=", ">") else (smaller, greater)
    if holding <= cfg.tail and c.holds(value):
        return HOLDS
    if (other <= cfg.tail and not c.holds(value)) or c.negligible(interval.ends):
        return FAILS
    return INCONCLUSIVE
