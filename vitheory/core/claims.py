"""A paper's claims as checks: what each claim says, which numbers measure it, the thresholds, and how
sure the verdict is.

Each paper package defines its claims (`vitheory.<paper>.claims.PAPER`); this module holds what they
share. A verdict is never written by hand: `evaluate` reads the numbers from the pipeline's
artifacts and compares them with the thresholds. Thresholds belong to the claim's definition, not
to params.yaml: they do not move to fit a run.

Every claim measures its quantities from groups of independent units (seeds, or mini-batches where a
quantity has one model): `samples(root)` reads them, `statistics(samples)` computes the quantities.
A percentile bootstrap resamples the units of each group and gives every criterion's quantity an
interval. A criterion holds when its whole interval lies on the threshold's side, does not hold when
the whole interval lies on the other, and is inconclusive when the interval straddles the threshold.
A claim holds when every criterion holds and does not hold when any does not; else it is inconclusive.

A claim's `conditions` are criteria on the measurement, not on the claim: that a grid brackets the
transition it locates, that the models it compares trained. When one is not met the regime cannot show
the effect, and the claim is inconclusive whatever its criteria say. A claim's `variants` measure it
again under other settings (a wider grid, another score form, another dataset): the report states
their verdicts beside the main one and names every claim whose verdict changes with the setting.
"""

from __future__ import annotations

import math
import operator
import os
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from vitheory.core.paths import artifact

OPERATORS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}
HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"

Samples = Mapping[str, Sequence[Any]]  # group -> its units, resampled with replacement within the group
Measured = dict[str, float | None]


@dataclass(frozen=True)
class Criterion:
    """`measured[quantity] <op> threshold` must hold."""

    quantity: str
    op: Literal[">=", "<=", ">", "<"]
    threshold: float

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
        the quantity could not be measured)."""
        ends = (value, *interval)
        if None in ends:
            return INCONCLUSIVE
        if all(self.holds(end) for end in ends):
            return HOLDS
        if not any(self.holds(end) for end in ends):
            return FAILS
        return INCONCLUSIVE

    def __str__(self) -> str:
        return f"{self.quantity} {self.op} {self.threshold:g}"


@dataclass(frozen=True)
class Variant:
    """The claim measured again from other units: `samples(root)` as the claim's, another setting."""

    name: str
    samples: Callable[[Path], Samples]


@dataclass(frozen=True)
class Claim:
    """One claim. `samples(root)` reads its units from the artifacts under the repository root `root`;
    `statistics(samples)` measures every quantity from them; `regime(params)` says where the run's
    settings put it; `evidence` are artifact paths relative to the root."""

    id: str
    statement: str
    metric: str
    criteria: tuple[Criterion, ...]
    evidence: tuple[Path, ...]
    samples: Callable[[Path], Samples]
    statistics: Callable[[Samples], Measured]
    regime: Callable[[Any], str]
    conditions: tuple[Criterion, ...] = ()
    variants: tuple[Variant, ...] = ()

    def measure(self, root: Path) -> Measured:
        return self.statistics(self.samples(root))


@dataclass(frozen=True)
class Paper:
    key: str  # as cited: [LI23]
    citation: str
    claims: tuple[Claim, ...]


@dataclass(frozen=True)
class Bootstrap:
    """Resamples and confidence of the intervals (params.yaml `report`)."""

    resamples: int
    confidence: float
    seed: int


def resample(samples: Samples, rng: np.random.Generator) -> dict[str, list[Any]]:
    """Each group's units drawn with replacement, as many as it has."""
    return {group: [units[i] for i in rng.integers(0, len(units), len(units))] for group, units in samples.items()}


def intervals(claim: Claim, samples: Samples, cfg: Bootstrap, setting: str = ""
              ) -> dict[str, tuple[float | None, float | None]]:
    """Percentile bootstrap interval of each criterion's and condition's quantity. The generator is
    seeded by the claim's id and the setting, so an interval does not depend on which other claims were
    evaluated."""
    rng = np.random.default_rng([cfg.seed, zlib.crc32(f"{claim.id}{setting}".encode())])
    quantities = sorted({c.quantity for c in (*claim.criteria, *claim.conditions)})
    draws: dict[str, list[float]] = {q: [] for q in quantities}
    for _ in range(cfg.resamples):
        measured = claim.statistics(resample(samples, rng))
        for quantity in quantities:
            value = measured[quantity]
            # a quantity that cannot be measured on a resample (too few points to fit) counts as missing
            draws[quantity].append(math.nan if value is None else float(value))
    tail = 100 * (1 - cfg.confidence) / 2
    found = {}
    for quantity, values in draws.items():
        finite = np.array(values)[~np.isnan(values)]
        found[quantity] = ((float(np.percentile(finite, tail)), float(np.percentile(finite, 100 - tail)))
                           if len(finite) else (None, None))
    return found


def claim_verdict(verdicts: Sequence[str], conditions: Sequence[str] = ()) -> str:
    """FAILS if any criterion fails, HOLDS if all hold, else INCONCLUSIVE; INCONCLUSIVE whatever the
    criteria say when a condition of the measurement is not met."""
    if any(v != HOLDS for v in conditions):
        return INCONCLUSIVE
    if FAILS in verdicts:
        return FAILS
    return HOLDS if all(v == HOLDS for v in verdicts) else INCONCLUSIVE


def _checks(criteria: Sequence[Criterion], measured: Measured, found: dict) -> dict[str, dict[str, Any]]:
    return {str(c): {"threshold": f"{c.op} {c.threshold:g}", "interval": list(found[c.quantity]),
                     "margin": c.margin(measured[c.quantity]),
                     "verdict": c.verdict(measured[c.quantity], found[c.quantity])}
            for c in criteria}


def _judge(claim: Claim, samples: Samples, cfg: Bootstrap, setting: str = "") -> dict[str, Any]:
    measured = claim.statistics(samples)
    found = intervals(claim, samples, cfg, setting)
    criteria, conditions = _checks(claim.criteria, measured, found), _checks(claim.conditions, measured, found)
    verdict = claim_verdict([c["verdict"] for c in criteria.values()], [c["verdict"] for c in conditions.values()])
    return {"measured": measured, "criteria": criteria, "conditions": conditions, "verdict": verdict,
            "units": {group: len(units) for group, units in samples.items()}}


def evaluate(claim: Claim, paper: str, root: Path, cfg: Bootstrap) -> dict[str, Any]:
    """The claim's record for claims.json: every measured quantity, each criterion's and condition's
    interval, margin and verdict, the claim's verdict, and the same under each variant setting;
    evidence relative to the report's folder, where it is linked from."""
    judged = _judge(claim, claim.samples(root), cfg)
    report_folder = artifact("report").parent
    return {
        "id": claim.id,
        "paper": paper,
        "statement": claim.statement,
        "metric": claim.metric,
        **judged,
        "variants": {variant.name: _judge(claim, variant.samples(root), cfg, variant.name)
                     for variant in claim.variants},
        "evidence": [Path(os.path.relpath(path, report_folder)).as_posix() for path in claim.evidence],
    }
