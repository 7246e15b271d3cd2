"""A paper's claims as checks: what each claim says, which numbers measure it, the thresholds, and how
sure the verdict is.

Each paper package defines its claims (`vitheory.<paper>.claims.PAPER`); this module holds what they
share. A verdict is never written by hand: `evaluate` reads the numbers from the pipeline's
artifacts and compares them with the thresholds. Thresholds belong to the claim's definition, not
to params.yaml: they do not move to fit a run; each names its source, the paper's or ours.

Every claim measures its quantities from groups of independent units (seeds: a model's mini-batches,
blocks or test images are measured inside their seed, never resampled as units):
`samples(root)` reads them, `statistics(samples)` computes the quantities. Each quantity's interval
(`intervals`) is the hull of two: a Student-t interval whose standard error is the delete-one
jackknife's, summed over the groups, with Welch-Satterthwaite degrees of freedom (for the mean of one
group exactly Student-t's, for a difference of two groups' means exactly Welch's: both cover at their
nominal level for normal units at any unit count), and a percentile bootstrap, which alone covers 73%
of the time at 3 units and 84% at 5 but sees the spread of a median or a step statistic (a sample
size reached, an indicator), where every leave-one-out value can be the same and the jackknife sees
none. tests/core/test_coverage.py measures the coverage at the unit counts the default run uses.
A criterion holds when its whole interval lies on the threshold's side, does not hold when
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
from scipy import stats

from vitheory.core.config import NON_NEGATIVE, Rule, Section, at_least, knob
from vitheory.core.paths import artifact

OPERATORS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}
HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"

Samples = Mapping[str, Sequence[Any]]  # group -> its independent units
Measured = dict[str, float | None]


THRESHOLD_SOURCES = ("paper: ", "ours: ")


@dataclass(frozen=True)
class Criterion:
    """`measured[quantity] <op> threshold` must hold. `source` says where the threshold comes from:
    "paper: " and the theorem, figure or sentence it operationalises, or "ours: " and why we chose it
    (a reviewer must never read a threshold of ours as the paper's)."""

    quantity: str
    op: Literal[">=", "<=", ">", "<"]
    threshold: float
    source: str

    def __post_init__(self) -> None:
        if not self.source.startswith(THRESHOLD_SOURCES) or not self.source.partition(": ")[2].strip():
            raise ValueError(f"criterion {self}: its source must say 'paper: <where>' or 'ours: <why>', "
                             f"not {self.source!r}")

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


INTERVAL_METHOD = ("the hull of two intervals over each claim's independent units: Student-t with the delete-one "
                   "jackknife's standard error (summed over groups, Welch-Satterthwaite degrees of freedom; exact for "
                   "a mean and Welch's for a difference of means) and a percentile bootstrap (for medians and step "
                   "statistics, where the jackknife sees no spread)")


@dataclass(frozen=True)
class ReportParams(Section):
    """params.yaml `report`: the intervals' confidence and the bootstrap's resamples and seed."""

    confidence: float = knob(Rule(lambda v: 0.5 <= v < 1, "in [0.5, 1)"))
    bootstrap: int = knob(at_least(100))
    seed: int = knob(NON_NEGATIVE)


@dataclass(frozen=True)
class IntervalSettings:
    """Confidence of the intervals and the bootstrap's resamples and seed (params.yaml `report`)."""

    confidence: float
    resamples: int
    seed: int


@dataclass(frozen=True)
class Interval:
    """A quantity's interval, the hull of its two parts, and what they rest on."""

    low: float | None
    high: float | None
    jackknife_t: tuple[float | None, float | None]
    bootstrap: tuple[float | None, float | None]
    units: dict[str, int]  # the groups whose units move the quantity, and how many each has
    df: float | None  # the t part's degrees of freedom; None: no spread (units alike, or one unit a group)
    unmeasured: int  # bootstrap resamples on which the quantity could not be measured


def _jackknife_spread(claim: Claim, samples: Samples, quantities: Sequence[str]
                      ) -> dict[str, list[tuple[str, int, float] | None]]:
    """Per quantity, each group's jackknife variance (n - 1) / n * sum_i (theta_(i) - mean theta_(.))^2
    over its n leave-one-out values, as (group, n, variance); None where a quantity cannot be measured
    with one unit left out. A group of one unit (a setting, or a single seed) has no spread to give."""
    spread: dict[str, list] = {q: [] for q in quantities}
    for group, units in samples.items():
        n = len(units)
        if n < 2:
            continue
        left_out = [claim.statistics({**samples, group: [*units[:i], *units[i + 1:]]}) for i in range(n)]
        for quantity in quantities:
            values = [measured[quantity] for measured in left_out]
            if None in values:
                spread[quantity].append(None)
                continue
            values = np.asarray(values, dtype=float)
            # equal up to rounding, or a yes/no answer (1 or 0), whose t interval would mean nothing: the
            # bootstrap's share of resamples that answer each way is its spread
            if np.ptp(values) <= 1e-12 * max(1.0, float(np.abs(values).max())) or set(values) <= {0.0, 1.0}:
                spread[quantity].append((group, n, 0.0))
                continue
            spread[quantity].append((group, n, float((n - 1) / n * ((values - values.mean()) ** 2).sum())))
    return spread


def _jackknife_t(value: float | None, parts: list, confidence: float
                 ) -> tuple[tuple[float | None, float | None], dict[str, int], float | None]:
    """The point value plus and minus t_df * sqrt(sum of the groups' jackknife variances)."""
    # not measurable, or a leave-one-out value that ran off to infinity: no interval
    if value is None or None in parts or not all(math.isfinite(part[2]) for part in parts):
        return (None, None), {}, None
    moving = [(group, n, variance) for group, n, variance in parts if variance > 0]
    if not moving:
        return (value, value), {}, None
    variance = sum(v for _, _, v in moving)
    df = variance ** 2 / sum(v ** 2 / (n - 1) for _, n, v in moving)
    half = float(stats.t.ppf((1 + confidence) / 2, df)) * math.sqrt(variance)
    return (value - half, value + half), {group: n for group, n, _ in moving}, df


def resample(samples: Samples, rng: np.random.Generator) -> dict[str, list[Any]]:
    """Each group's units drawn with replacement, as many as it has."""
    return {group: [units[i] for i in rng.integers(0, len(units), len(units))] for group, units in samples.items()}


def _bootstrap(claim: Claim, samples: Samples, quantities: Sequence[str], cfg: IntervalSettings, setting: str
               ) -> dict[str, tuple[tuple[float | None, float | None], int]]:
    """Per quantity, the percentile bootstrap interval and the number of resamples on which it could not be
    measured (a fit with too few points, a threshold not reached inside the grid). Those are not dropped:
    when more of them than one tail's share, the interval cannot be placed and is None. The generator is
    seeded by the claim's id and the setting, so an interval does not depend on which other claims ran."""
    rng = np.random.default_rng([cfg.seed, zlib.crc32(f"{claim.id}{setting}".encode())])
    draws: dict[str, list[float]] = {q: [] for q in quantities}
    for _ in range(cfg.resamples):
        measured = claim.statistics(resample(samples, rng))
        for quantity in quantities:
            value = measured[quantity]
            draws[quantity].append(math.nan if value is None else float(value))
    tail = (1 - cfg.confidence) / 2
    found = {}
    for quantity, values in draws.items():
        values = np.asarray(values)
        unmeasured = int(np.isnan(values).sum())
        if unmeasured > tail * len(values):
            found[quantity] = ((None, None), unmeasured)
            continue
        finite = values[~np.isnan(values)]
        found[quantity] = ((float(np.percentile(finite, 100 * tail)), float(np.percentile(finite, 100 * (1 - tail)))),
                           unmeasured)
    return found


def intervals(claim: Claim, samples: Samples, cfg: IntervalSettings, setting: str = "") -> dict[str, Interval]:
    """The interval of each criterion's and condition's quantity (INTERVAL_METHOD). Either part that cannot
    be placed leaves the quantity without an interval (its criteria are inconclusive)."""
    quantities = sorted({c.quantity for c in (*claim.criteria, *claim.conditions)})
    measured = claim.statistics(samples)
    booted = _bootstrap(claim, samples, quantities, cfg, setting)
    found = {}
    for quantity, parts in _jackknife_spread(claim, samples, quantities).items():
        t_part, units, df = _jackknife_t(measured[quantity], parts, cfg.confidence)
        boot_part, unmeasured = booted[quantity]
        ends = (*t_part, *boot_part)
        low, high = (None, None) if None in ends else (min(ends), max(ends))
        found[quantity] = Interval(low, high, t_part, boot_part, units, df, unmeasured)
    return found


def claim_verdict(verdicts: Sequence[str], conditions: Sequence[str] = ()) -> str:
    """FAILS if any criterion fails, HOLDS if all hold, else INCONCLUSIVE; INCONCLUSIVE whatever the
    criteria say when a condition of the measurement is not met."""
    if any(v != HOLDS for v in conditions):
        return INCONCLUSIVE
    if FAILS in verdicts:
        return FAILS
    return HOLDS if all(v == HOLDS for v in verdicts) else INCONCLUSIVE


def _checks(criteria: Sequence[Criterion], measured: Measured, found: dict[str, Interval]) -> dict[str, dict[str, Any]]:
    checks = {}
    for c in criteria:
        interval = found[c.quantity]
        checks[str(c)] = {"threshold": f"{c.op} {c.threshold:g}", "source": c.source,
                          "interval": [interval.low, interval.high], "jackknife_t": list(interval.jackknife_t),
                          "bootstrap": list(interval.bootstrap), "units": interval.units, "df": interval.df,
                          "unmeasured_resamples": interval.unmeasured, "margin": c.margin(measured[c.quantity]),
                          "verdict": c.verdict(measured[c.quantity], (interval.low, interval.high))}
    return checks


def _judge(claim: Claim, samples: Samples, cfg: IntervalSettings, setting: str = "") -> dict[str, Any]:
    measured = claim.statistics(samples)
    found = intervals(claim, samples, cfg, setting)
    criteria, conditions = _checks(claim.criteria, measured, found), _checks(claim.conditions, measured, found)
    verdict = claim_verdict([c["verdict"] for c in criteria.values()], [c["verdict"] for c in conditions.values()])
    return {"measured": measured, "criteria": criteria, "conditions": conditions, "verdict": verdict,
            "units": {group: len(units) for group, units in samples.items()}}


def evaluate(claim: Claim, paper: str, root: Path, cfg: IntervalSettings) -> dict[str, Any]:
    """The claim's record for claims.json: every measured quantity; each criterion's and condition's
    threshold and its source, interval (its two parts, the units it rests on, the t part's degrees of
    freedom, the resamples that could not measure it), margin and verdict; the claim's verdict; the same
    under each variant setting; evidence relative to the report's folder, where it is linked from."""
    judged = _judge(claim, claim.samples(root), cfg)
    report_folder = artifact("report").parent
    return {
        "id": claim.id,
        "paper": paper,
        "statement": claim.statement,
        "metric": claim.metric,
        **judged,
        "interval": {"method": INTERVAL_METHOD, "confidence": cfg.confidence, "resamples": cfg.resamples},
        "variants": {variant.name: _judge(claim, variant.samples(root), cfg, variant.name)
                     for variant in claim.variants},
        "evidence": [Path(os.path.relpath(path, report_folder)).as_posix() for path in claim.evidence],
    }
