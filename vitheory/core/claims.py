"""A paper's claims as checks: what each claim says, which numbers measure it, the thresholds, and how
sure the verdict is.

Each paper package defines its claims (`vitheory.<paper>.claims.PAPER`); this module holds what they
share. A verdict is never written by hand: `evaluate` reads the numbers from the pipeline's
artifacts and compares them with the thresholds. Thresholds belong to the claim's definition, not
to params.yaml: they do not move to fit a run; each names its source, the paper's or ours.

Every claim measures its quantities from groups of independent units (seeds: a model's mini-batches,
blocks or test images are measured inside their seed, never resampled as units):
`samples(root)` reads them, `statistics(samples)` computes the quantities. Each criterion declares what
kind of quantity it decides on, and its interval is the one the table of methods
(vitheory.core.intervals, `METHODS`) makes for that kind.
A criterion holds when its whole interval lies on the threshold's side, does not hold when the whole
interval lies on the other (or, where the criterion declares a smallest effect of interest, wholly within
it of the threshold), and is inconclusive otherwise. A paired direction is decided by its sign-flip
p-values instead, not by the interval shown beside them: it holds when the test rejects the other side at
the interval's tail level, does not hold when it rejects the holding side (`decide`). An inconclusive
criterion says how many seeds its test would need at the measured effect and spread (`seeds_needed`).
A claim holds when every criterion holds and does not hold when any does not; else it is inconclusive.

A claim's `conditions` are criteria on the measurement, not on the claim: that a grid brackets the
transition it locates, that the models it compares trained. When one is not met the regime cannot show
the effect, and the claim is inconclusive whatever its criteria say. A claim's `variants` measure it
again under other settings (a wider grid, another score form, another dataset): the report states
their verdicts beside the main one and names every claim whose verdict changes with the setting. A
claim's `data` says whether it runs on a paper's synthetic data model or on real images.

claims.json keys each check by its label (`str(criterion)`, for people) and stores its quantity apart
(`quantity`): what reads a check takes the quantity from there, never from the label.
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from scipy import stats

from vitheory.core.intervals import (GROUPED, LOG, METHODS, PAIRED, SHARE, STEP, UNBOUNDED, Interval,
                                     IntervalSettings, Measured, Measurement, Samples, clopper_pearson, method_name,
                                     smallest_decisive_units)
from vitheory.core.paths import artifact

OPERATORS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}
HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"

THRESHOLD_SOURCES = ("paper: ", "ours: ")
CONDITION_LABEL = "condition: "  # what precedes a condition's label where it is listed with the criteria
SYNTHETIC, REAL = "synthetic", "real"  # a claim's data: a paper's synthetic data model, or real images

POWER = 0.8  # the power at which `seeds_needed` plans a test
AFFORDABLE_SEEDS = 1000  # beyond this, a power line says the effect is too small to decide, not a count


@dataclass(frozen=True)
class Criterion:
    """`measured[quantity] <op> threshold` must hold. `source` says where the threshold comes from:
    "paper: " and the theorem, figure or sentence it operationalises, or "ours: " and why we chose it
    (a reviewer must never read a threshold of ours as the paper's). `kind` (a key of `METHODS`) chooses
    the interval; `group` names the units a share, median or paired quantity is taken over; `bounds` is the
    quantity's range, which its interval never leaves. A `smallest_effect` (with its own source) lets an
    interval lying wholly within it of the threshold decide "does not hold"."""

    quantity: str
    op: Literal[">=", "<=", ">", "<"]
    threshold: float
    source: str
    kind: str
    group: str | None = None
    bounds: tuple[float, float] = UNBOUNDED
    smallest_effect: float | None = None
    smallest_effect_source: str = ""

    def __post_init__(self) -> None:
        if not self.source.startswith(THRESHOLD_SOURCES) or not self.source.partition(": ")[2].strip():
            raise ValueError(f"criterion {self}: its source must say 'paper: <where>' or 'ours: <why>', "
                             f"not {self.source!r}")
        if self.kind not in METHODS:
            raise ValueError(f"criterion {self}: kind {self.kind!r} is none of {sorted(METHODS)}")
        if (self.kind in GROUPED) != (self.group is not None):
            raise ValueError(f"criterion {self}: a {self.kind} quantity "
                             + ("names the group of units it is taken over" if self.group is None else "takes no group"))
        if self.smallest_effect is not None and not (
                self.smallest_effect > 0 and self.smallest_effect_source.startswith(THRESHOLD_SOURCES)):
            raise ValueError(f"criterion {self}: a smallest effect is positive and names its source")

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


@dataclass(frozen=True)
class Variant:
    """The claim measured again from other units: `samples(root)` as the claim's, another setting."""

    name: str
    samples: Callable[[Path], Samples]


@dataclass(frozen=True)
class Claim:
    """One claim. `samples(root)` reads its units from the artifacts under the repository root `root`;
    `statistics(samples)` measures every quantity from them; `regime(params)` says where the run's
    settings put it; `data` whether it is measured on a paper's synthetic data model (SYNTHETIC) or on real
    images (REAL), which the report's verdict table reads, never the regime's text; `evidence` are
    artifact paths relative to the root; `seeds` are the params keys that set how many independent units
    (seeds) it has, which the `decisive` preset raises to what its inconclusive criteria need (none: its
    units are not seeds, as a model written down by hand)."""

    id: str
    statement: str
    metric: str
    criteria: tuple[Criterion, ...]
    evidence: tuple[Path, ...]
    samples: Callable[[Path], Samples]
    statistics: Callable[[Samples], Measured]
    regime: Callable[[Any], str]
    data: Literal["synthetic", "real"]
    conditions: tuple[Criterion, ...] = ()
    variants: tuple[Variant, ...] = ()
    seeds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.data not in (SYNTHETIC, REAL):
            raise ValueError(f"{self.id}: data {self.data!r} is neither {SYNTHETIC!r} nor {REAL!r}")
        declared: dict[str, tuple] = {}
        for c in (*self.criteria, *self.conditions):
            if declared.setdefault(c.quantity, (c.kind, c.group, c.bounds)) != (c.kind, c.group, c.bounds):
                raise ValueError(f"{self.id}: {c.quantity} is declared as two kinds of quantity")

    def measure(self, root: Path) -> Measured:
        return self.statistics(self.samples(root))


@dataclass(frozen=True)
class Paper:
    key: str  # as cited: [LI23]
    citation: str
    claims: tuple[Claim, ...]


def _declared(claim: Claim) -> dict[str, Criterion]:
    return {c.quantity: c for c in (*claim.criteria, *claim.conditions)}


def intervals(claim: Claim, samples: Samples, cfg: IntervalSettings, setting: str = "") -> dict[str, Interval]:
    """The interval of each criterion's and condition's quantity, by the method its kind names in `METHODS`."""
    measurement = Measurement(claim.statistics, samples, claim.statistics(samples), cfg, f"{claim.id}{setting}")
    return {quantity: METHODS[c.kind].interval(c, measurement) for quantity, c in sorted(_declared(claim).items())}


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


def _share_seeds_needed(c: Criterion, value: float, n: int, confidence: float) -> int | None:
    """The smallest m >= n whose Clopper-Pearson interval at the measured share decides: counted one by one up
    to SHARE_SCAN (rounding k = value * m makes the answer step unevenly there), bisected beyond it, where
    the interval only narrows."""
    def decides(m: int) -> bool:
        return c.verdict(value, clopper_pearson(round(value * m), m, confidence)) != INCONCLUSIVE

    found = next((m for m in range(n, max(n, SHARE_SCAN)) if decides(m)), None)
    if found is not None or not decides(SHARE_LIMIT):
        return found
    low, high = max(n, SHARE_SCAN), SHARE_LIMIT  # low does not decide, high does
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if decides(middle) else (middle, high)
    return high


SHARE_SCAN, SHARE_LIMIT = 2_000, 1_000_000


def labelled_checks(judged: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, check) of every criterion, then every condition (its label after CONDITION_LABEL), of one
    judged setting of a claims.json record: how the report, the README and the decisive preset name them."""
    return [*judged["criteria"].items(),
            *((f"{CONDITION_LABEL}{name}", check) for name, check in judged["conditions"].items())]


def seeds_needed(c: Criterion, value: float | None, interval: Interval, confidence: float) -> int | None:
    """About how many seeds (per group) the criterion's test would need to decide at the measured effect
    and spread, with power POWER: n (z_{1-tail} + z_POWER)^2 se^2 / margin^2 for the units n it rests on
    now, on the scale its interval is made on, and never fewer than its method can decide with. None when
    it cannot be planned: no effect measured, no spread, or no units."""
    margin = c.margin(value)
    n = max(interval.units.values(), default=0)
    if not n or margin is None or margin == 0 or not interval.standard_error:
        return None
    if c.kind == SHARE:
        return _share_seeds_needed(c, value, n, confidence)
    if c.kind == LOG:
        if value <= 0 or c.threshold <= 0:
            return None
        margin = math.log(value) - math.log(c.threshold)
    z = float(stats.norm.ppf((1 + confidence) / 2) + stats.norm.ppf(POWER))
    needed = math.ceil(n * (z * interval.standard_error / abs(margin)) ** 2)
    return max(needed, n + 1, smallest_decisive_units(c.kind, confidence))


def claim_verdict(verdicts: Sequence[str], conditions: Sequence[str] = ()) -> str:
    """INCONCLUSIVE whatever the criteria say when a condition of the measurement is not met; else FAILS if
    any criterion fails, HOLDS if all hold, else INCONCLUSIVE."""
    if any(v != HOLDS for v in conditions):
        return INCONCLUSIVE
    if FAILS in verdicts:
        return FAILS
    return HOLDS if all(v == HOLDS for v in verdicts) else INCONCLUSIVE


def _checks(criteria: Sequence[Criterion], measured: Measured, found: dict[str, Interval], cfg: IntervalSettings
            ) -> dict[str, dict[str, Any]]:
    checks = {}
    for c in criteria:
        interval, value = found[c.quantity], measured[c.quantity]
        verdict = decide(c, value, interval, cfg)
        check = {"quantity": c.quantity, "threshold": f"{c.op} {c.threshold:g}", "source": c.source,
                 "kind": c.kind, "method": method_name(c.kind, interval), "interval": [interval.low, interval.high],
                 "coverage": interval.coverage, "units": interval.units, "df": interval.df,
                 "margin": c.margin(value), "verdict": verdict}
        if interval.p_values is not None:
            check["p_values"] = {"greater": interval.p_values[0], "smaller": interval.p_values[1]}
        if c.kind == STEP:
            check["unmeasured_resamples"] = interval.unmeasured
        if c.smallest_effect is not None:
            check["smallest_effect"] = {"value": c.smallest_effect, "source": c.smallest_effect_source}
            if verdict == FAILS and c.negligible(interval.ends):
                check["reason"] = f"the effect, if any, is smaller than {c.smallest_effect:g}"
        if verdict == INCONCLUSIVE:
            check["seeds_needed"] = seeds_needed(c, value, interval, cfg.confidence)
        checks[str(c)] = check
    return checks


def _judge(claim: Claim, samples: Samples, cfg: IntervalSettings, setting: str = "") -> dict[str, Any]:
    measured = claim.statistics(samples)
    found = intervals(claim, samples, cfg, setting)
    criteria = _checks(claim.criteria, measured, found, cfg)
    conditions = _checks(claim.conditions, measured, found, cfg)
    verdict = claim_verdict([c["verdict"] for c in criteria.values()], [c["verdict"] for c in conditions.values()])
    return {"measured": measured, "criteria": criteria, "conditions": conditions, "verdict": verdict,
            "units": {group: len(units) for group, units in samples.items()}}


def evaluate(claim: Claim, paper: str, root: Path, cfg: IntervalSettings) -> dict[str, Any]:
    """The claim's record for claims.json: every measured quantity; each criterion's and condition's
    quantity, threshold and its source, kind and interval method, interval and its coverage, the units it
    rests on, Student-t's degrees of freedom, a paired test's p-values, margin, verdict and, when
    inconclusive, the seeds its test would need; the claim's verdict; the same under each variant setting;
    evidence relative to the report's folder, where it is linked from."""
    judged = _judge(claim, claim.samples(root), cfg)
    report_folder = artifact("report").parent
    return {
        "id": claim.id,
        "paper": paper,
        "statement": claim.statement,
        "metric": claim.metric,
        **judged,
        "interval": {"confidence": cfg.confidence, "resamples": cfg.bootstrap},
        "variants": {variant.name: _judge(claim, variant.samples(root), cfg, variant.name)
                     for variant in claim.variants},
        "evidence": [Path(os.path.relpath(path, report_folder)).as_posix() for path in claim.evidence],
    }
