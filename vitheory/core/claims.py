"""A paper's claims as checks: what each claim says, which numbers measure it, the thresholds, and how
sure the verdict is.

Each paper package defines its claims (`vitheory.<paper>.claims.PAPER`); this module holds what they
share. A verdict is never written by hand: `evaluate` reads the numbers from the pipeline's
artifacts and compares them with the thresholds. Thresholds belong to the claim's definition, not
to params.yaml: they do not move to fit a run; each names its source, the paper's or ours.

Every claim measures its quantities from groups of independent units (seeds: a model's mini-batches,
blocks or test images are measured inside their seed, never resampled as units):
`samples(root)` reads them, `statistics(samples)` computes the quantities. Each criterion declares what
kind of quantity it decides on (`KINDS`), and its interval is the one made for that kind: Student-t for
a mean or a difference of means, on the log scale for a positive skewed quantity, Clopper-Pearson for a
share of seeds, the order-statistic interval for a median, an exact sign-flip test for a paired direction,
a percentile bootstrap for a step statistic. Every interval lies inside the quantity's range (`bounds`).
tests/core/test_coverage.py measures each kind's coverage, one side at a time, at the unit counts the
default run uses.
A criterion holds when its whole interval lies on the threshold's side (for a paired direction: when the
exact test rejects the other side at the interval's tail level), does not hold when the whole interval
lies on the other (or, where the criterion declares a smallest effect of interest, wholly within it of
the threshold), and is inconclusive otherwise; an inconclusive criterion says how many seeds its test
would need at the measured effect and spread (`seeds_needed`).
A claim holds when every criterion holds and does not hold when any does not; else it is inconclusive.

A claim's `conditions` are criteria on the measurement, not on the claim: that a grid brackets the
transition it locates, that the models it compares trained. When one is not met the regime cannot show
the effect, and the claim is inconclusive whatever its criteria say. A claim's `variants` measure it
again under other settings (a wider grid, another score form, another dataset): the report states
their verdicts beside the main one and names every claim whose verdict changes with the setting.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
import os
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
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

# The kinds of quantity a criterion decides on, and the interval made for each.
MEAN, LOG, SHARE, MEDIAN, PAIRED, STEP = "mean", "log", "share", "median", "paired", "step"
KINDS = {
    MEAN: ("Student-t", "a mean over seeds, or a difference of groups' means: Student-t with the delete-one "
           "jackknife's standard error (exactly Student-t's for one group, Welch's for a difference of groups)"),
    LOG: ("Student-t, log scale", "a positive, skewed quantity (a ratio, an eigenvalue): the same Student-t "
          "interval on the log of the quantity, exponentiated"),
    SHARE: ("Clopper-Pearson", "a share of seeds (a yes or no per seed): the exact binomial interval, at least "
            "its nominal coverage and always inside [0, 1]"),
    MEDIAN: ("order statistics", "a median over seeds: the distribution-free interval between two of the seeds' "
             "ordered values (a censored seed ordered at its infinite end), as near its nominal coverage as the "
             "seeds allow (at 5 seeds [min, max] covers 93.75%)"),
    PAIRED: ("exact sign-flip", "a direction measured within each seed (a difference on the same seed): the "
             "exact sign-flip test of the seeds' values against the threshold, one-sided each way, which decides; "
             "the Student-t interval beside it"),
    STEP: ("percentile bootstrap", "a step statistic over the whole grid (an indicator, a first sample size "
           "reached), whose leave-one-out values do not move: the percentile bootstrap over seeds, its ends the "
           "order statistics outside the tails"),
}
UNBOUNDED = (-math.inf, math.inf)
POWER = 0.8  # the power at which `seeds_needed` plans a test
AFFORDABLE_SEEDS = 1000  # beyond this, a power line says the effect is too small to decide, not a count


@dataclass(frozen=True)
class Criterion:
    """`measured[quantity] <op> threshold` must hold. `source` says where the threshold comes from:
    "paper: " and the theorem, figure or sentence it operationalises, or "ours: " and why we chose it
    (a reviewer must never read a threshold of ours as the paper's). `kind` (one of `KINDS`) chooses the
    interval; `group` names the units a share, median or paired quantity is taken over; `bounds` is the
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
        if self.kind not in KINDS:
            raise ValueError(f"criterion {self}: kind {self.kind!r} is none of {sorted(KINDS)}")
        if (self.kind in (SHARE, MEDIAN, PAIRED)) != (self.group is not None):
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
    settings put it; `evidence` are artifact paths relative to the root; `seeds` are the params keys that
    set how many independent units (seeds) it has, which the `decisive` preset raises to what its
    inconclusive criteria need (none: its units are not seeds, as a model written down by hand)."""

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
    seeds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
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

    @property
    def tail(self) -> float:
        return (1 - self.confidence) / 2


@dataclass(frozen=True)
class Interval:
    """A quantity's interval by the method of its kind, and what it rests on."""

    low: float | None
    high: float | None
    coverage: float | None  # the nominal coverage, or the exact one where the method has it (shares, medians)
    units: dict[str, int]  # the groups whose units move the quantity, and how many each has
    df: float | None = None  # Student-t's degrees of freedom; None: not a t interval, or no spread
    standard_error: float | None = None  # on the scale the interval is made on (log for LOG)
    p_values: tuple[float, float] | None = None  # PAIRED: one-sided p for (greater, smaller than the threshold)
    unmeasured: int = 0  # bootstrap resamples on which the quantity could not be measured

    @property
    def ends(self) -> tuple[float | None, float | None]:
        return self.low, self.high


def _clip(low: float, high: float, bounds: tuple[float, float]) -> tuple[float, float]:
    return max(low, bounds[0]), min(high, bounds[1])


def _left_out(claim: Claim, samples: Samples) -> dict[str, list[Measured]]:
    """Each group's delete-one measurements (groups of one unit, a setting, have none)."""
    return {group: [claim.statistics({**samples, group: [*units[:i], *units[i + 1:]]}) for i in range(len(units))]
            for group, units in samples.items() if len(units) > 1}


def per_unit(claim: Claim, samples: Samples, quantity: str, group: str) -> list[float | None]:
    """The quantity measured on each unit of `group` alone (the other groups whole): a seed's own value of a
    median, share or paired difference over seeds."""
    return [claim.statistics({**samples, group: [unit]})[quantity] for unit in samples[group]]


def _jackknife(value: float | None, left_out: dict[str, list[Measured]], quantity: str, confidence: float,
               transform: Callable[[float], float] = lambda x: x) -> tuple[tuple[float, float] | None, dict, float | None, float | None]:
    """Student-t on `transform` of the quantity: the point value plus and minus t_df times the square root of
    the groups' summed jackknife variances (n - 1) / n * sum_i (theta_(i) - mean theta_(.))^2, with
    Welch-Satterthwaite degrees of freedom; (interval, units, df, standard error). None for the interval when
    the quantity, or one of its leave-one-out values, cannot be measured or leaves the transform's domain."""
    try:
        centre = transform(value)
        parts = []
        for group, measured in left_out.items():
            values = [m[quantity] for m in measured]
            if None in values:
                return None, {}, None, None
            parts.append((group, len(values), np.asarray([transform(v) for v in values], dtype=float)))
    except (TypeError, ValueError):  # None, or outside the transform's domain (the log of 0)
        return None, {}, None, None
    if not math.isfinite(centre) or not all(np.isfinite(v).all() for _, _, v in parts):
        return None, {}, None, None
    moving = []
    for group, n, values in parts:
        # equal up to rounding: this group does not move the quantity
        if np.ptp(values) > 1e-12 * max(1.0, float(np.abs(values).max())):
            moving.append((group, n, float((n - 1) / n * ((values - values.mean()) ** 2).sum())))
    if not moving:
        return (centre, centre), {}, None, 0.0
    variance = sum(v for _, _, v in moving)
    df = variance ** 2 / sum(v ** 2 / (n - 1) for _, n, v in moving)
    half = float(stats.t.ppf((1 + confidence) / 2, df)) * math.sqrt(variance)
    return (centre - half, centre + half), {group: n for group, n, _ in moving}, df, math.sqrt(variance)


def _log(value: float) -> float:
    if value <= 0:
        raise ValueError("not positive")
    return math.log(value)


def clopper_pearson(k: int, n: int, confidence: float) -> tuple[float, float]:
    """The exact binomial interval of a share k / n: each tail at most (1 - confidence) / 2."""
    tail = (1 - confidence) / 2
    low = 0.0 if k == 0 else float(stats.beta.ppf(tail, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1 - tail, k + 1, n - k))
    return low, high


def order_statistic_ranks(n: int, confidence: float) -> tuple[int, float]:
    """The largest r with P(x_(r) <= median <= x_(n+1-r)) >= confidence for n continuous units, and that
    coverage 1 - 2 P(Binomial(n, 1/2) <= r - 1); r = 1 ([min, max]) with its coverage when none reaches it."""
    best = (1, 1 - 2 * 0.5 ** n)
    for r in range(2, (n + 1) // 2 + 1):
        coverage = 1 - 2 * float(stats.binom.cdf(r - 1, n, 0.5))
        if coverage < confidence:
            break
        best = (r, coverage)
    return best


SIGN_FLIP_DRAWS = 1 << 16  # beyond 16 units, this many random sign patterns instead of all 2^n


@functools.cache
def _every_sign_pattern(n: int) -> np.ndarray:
    return np.array(list(itertools.product((1.0, -1.0), repeat=n)))


def sign_flip_p_values(values: Sequence[float], threshold: float, rng: np.random.Generator) -> tuple[float, float]:
    """One-sided p-values of the sum of (value - threshold) under random signs: (P(T >= observed),
    P(T <= observed)); exact over all 2^n patterns up to 16 units. The smallest possible is 1 / 2^n."""
    shifted = np.asarray(values, dtype=float) - threshold
    n = len(shifted)
    if n <= 16:
        signs = _every_sign_pattern(n)
    else:  # the observed pattern (all +1) is always among them
        signs = np.vstack([np.ones(n), rng.choice((1.0, -1.0), size=(SIGN_FLIP_DRAWS - 1, n))])
    sums, observed = signs @ shifted, shifted.sum()
    tolerance = 1e-12 * max(1.0, float(np.abs(shifted).sum()))
    return float((sums >= observed - tolerance).mean()), float((sums <= observed + tolerance).mean())


def _bootstrap(claim: Claim, samples: Samples, quantities: Sequence[str], cfg: IntervalSettings, setting: str
               ) -> dict[str, tuple[tuple[float, float] | None, int, float | None]]:
    """Per quantity, the percentile bootstrap interval (the order statistics just outside each tail, so an
    infinite, censored value stays infinite), the number of resamples on which it could not be measured, and
    the resamples' standard deviation. Unmeasurable resamples are not dropped: when more of them than one
    tail's share, the interval cannot be placed and is None. The generator is seeded by the claim's id and
    the setting, so an interval does not depend on which other claims ran."""
    rng = np.random.default_rng([cfg.seed, zlib.crc32(f"{claim.id}{setting}".encode())])
    draws: dict[str, list[float]] = {q: [] for q in quantities}
    for _ in range(cfg.resamples):
        measured = claim.statistics(resample(samples, rng))
        for quantity in quantities:
            value = measured[quantity]
            draws[quantity].append(math.nan if value is None else float(value))
    found = {}
    for quantity, values in draws.items():
        values = np.asarray(values)
        unmeasured = int(np.isnan(values).sum())
        finite = values[~np.isnan(values)]
        if unmeasured > cfg.tail * len(values) or not len(finite):
            found[quantity] = (None, unmeasured, None)
            continue
        low = float(np.quantile(finite, cfg.tail, method="lower"))
        high = float(np.quantile(finite, 1 - cfg.tail, method="higher"))
        spread = float(np.std(finite)) if np.isfinite(finite).all() else None
        found[quantity] = ((low, high), unmeasured, spread)
    return found


def resample(samples: Samples, rng: np.random.Generator) -> dict[str, list[Any]]:
    """Each group's units drawn with replacement, as many as it has."""
    return {group: [units[i] for i in rng.integers(0, len(units), len(units))] for group, units in samples.items()}


def _declared(claim: Claim) -> dict[str, Criterion]:
    return {c.quantity: c for c in (*claim.criteria, *claim.conditions)}


def intervals(claim: Claim, samples: Samples, cfg: IntervalSettings, setting: str = "") -> dict[str, Interval]:
    """The interval of each criterion's and condition's quantity, by the method of its kind (`KINDS`)."""
    declared = _declared(claim)
    measured = claim.statistics(samples)
    left_out = _left_out(claim, samples) if any(c.kind in (MEAN, LOG, PAIRED) for c in declared.values()) else {}
    steps = [q for q, c in declared.items() if c.kind == STEP]
    booted = _bootstrap(claim, samples, steps, cfg, setting) if steps else {}
    found = {}
    for quantity, c in sorted(declared.items()):
        value = measured[quantity]
        if c.kind in (MEAN, PAIRED):
            ends, units, df, se = _jackknife(value, left_out, quantity, cfg.confidence)
            interval = Interval(*(_clip(*ends, c.bounds) if ends else (None, None)), cfg.confidence, units,
                                df, se)
            if c.kind == PAIRED:
                interval = _paired(claim, samples, c, interval, cfg, setting)
        elif c.kind == LOG:
            ends, units, df, se = _jackknife(value, left_out, quantity, cfg.confidence, _log)
            ends = _clip(math.exp(ends[0]), math.exp(ends[1]), c.bounds) if ends else (None, None)
            interval = Interval(*ends, cfg.confidence, units, df, se)
        elif c.kind == SHARE:
            interval = _share(value, samples, c, cfg)
        elif c.kind == MEDIAN:
            interval = _median(claim, samples, c, cfg)
        else:
            ends, unmeasured, spread = booted[quantity]
            moving = {g: len(u) for g, u in samples.items() if len(u) > 1}
            interval = Interval(*(_clip(*ends, c.bounds) if ends else (None, None)), cfg.confidence,
                                moving if ends and ends[0] != ends[1] else {}, standard_error=spread,
                                unmeasured=unmeasured)
        found[quantity] = interval
    return found


def _share(value: float | None, samples: Samples, c: Criterion, cfg: IntervalSettings) -> Interval:
    n = len(samples[c.group])
    if value is None:
        return Interval(None, None, None, {})
    k = round(value * n)
    if abs(value * n - k) > 1e-9:
        raise ValueError(f"{c.quantity} = {value} is not a share of the {n} units of {c.group}")
    return Interval(*clopper_pearson(k, n, cfg.confidence), cfg.confidence, {c.group: n},
                    standard_error=math.sqrt(max(value * (1 - value), 0.25 / n) / n))


def _median(claim: Claim, samples: Samples, c: Criterion, cfg: IntervalSettings) -> Interval:
    values = per_unit(claim, samples, c.quantity, c.group)
    if None in values:  # truly undefined on some seed (a censored one is infinite, not None)
        return Interval(None, None, None, {})
    ordered = sorted(values)
    r, coverage = order_statistic_ranks(len(ordered), cfg.confidence)
    finite = [v for v in ordered if math.isfinite(v)]
    # the standard error of a median, 1.2533 sd / sqrt(n) for normal units: for planning seeds only
    se = 1.2533 * float(np.std(finite, ddof=1)) / math.sqrt(len(finite)) if len(finite) > 1 else None
    return Interval(*_clip(ordered[r - 1], ordered[-r], c.bounds), coverage,
                    {c.group: len(ordered)} if ordered[0] != ordered[-1] else {}, standard_error=se)


def _paired(claim: Claim, samples: Samples, c: Criterion, interval: Interval, cfg: IntervalSettings,
            setting: str) -> Interval:
    values = per_unit(claim, samples, c.quantity, c.group)
    if None in values or not all(math.isfinite(v) for v in values):
        return interval
    rng = np.random.default_rng([cfg.seed, zlib.crc32(f"{claim.id}{setting}{c.quantity}".encode())])
    return replace(interval, p_values=sign_flip_p_values(values, c.threshold, rng))


def decide(c: Criterion, value: float | None, interval: Interval, cfg: IntervalSettings) -> str:
    """The criterion's verdict. A paired direction is decided by its exact test: it holds when the test
    rejects the other side (one-sided p at most the interval's tail, the point value on the holding side),
    does not hold when the test rejects the holding side; the interval decides otherwise."""
    if c.kind != PAIRED or interval.p_values is None:
        return c.verdict(value, interval.ends)
    greater, smaller = interval.p_values
    holding, other = (greater, smaller) if c.op in (">=", ">") else (smaller, greater)
    if holding <= cfg.tail and c.holds(value):
        return HOLDS
    if (other <= cfg.tail and not c.holds(value)) or c.negligible(interval.ends):
        return FAILS
    return INCONCLUSIVE


def smallest_decisive_units(kind: str, confidence: float) -> int:
    """The fewest seeds at which the kind's exact method can decide at all: 2^-n <= the tail for a sign-flip
    test; [min, max] reaching the nominal coverage for a median; two for the others."""
    tail = (1 - confidence) / 2
    if kind == PAIRED:
        return math.ceil(math.log2(1 / tail))
    if kind == MEDIAN:
        return next(n for n in range(2, 64) if 1 - 2 * 0.5 ** n >= confidence)
    return 2


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
    """(label, check) of every criterion, then every condition (labelled `condition: ...`), of one judged
    setting of a claims.json record: how the report, the README and the decisive preset name them."""
    return [*judged["criteria"].items(), *((f"condition: {name}", check) for name, check in judged["conditions"].items())]


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
        check = {"threshold": f"{c.op} {c.threshold:g}", "source": c.source, "kind": c.kind,
                 "method": KINDS[c.kind][0], "interval": [interval.low, interval.high],
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
    threshold and its source, kind and interval method, interval and its coverage, the units it rests on,
    Student-t's degrees of freedom, a paired test's p-values, margin, verdict and, when inconclusive, the
    seeds its test would need; the claim's verdict; the same under each variant setting; evidence relative
    to the report's folder, where it is linked from."""
    judged = _judge(claim, claim.samples(root), cfg)
    report_folder = artifact("report").parent
    return {
        "id": claim.id,
        "paper": paper,
        "statement": claim.statement,
        "metric": claim.metric,
        **judged,
        "interval": {"confidence": cfg.confidence, "resamples": cfg.resamples},
        "variants": {variant.name: _judge(claim, variant.samples(root), cfg, variant.name)
                     for variant in claim.variants},
        "evidence": [Path(os.path.relpath(path, report_folder)).as_posix() for path in claim.evidence],
    }
