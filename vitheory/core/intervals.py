"""The interval of each kind of quantity a criterion decides on, as one table (`METHODS`): kind -> the
method's name, the function that makes the interval, what it is for, and what it assumes of the units.

Every method measures its quantity from a claim's groups of independent units (seeds; a group of one
unit, `SETTINGS_GROUP`, holds the run's settings and is no unit) through the claim's statistics
(`Measurement`), and every interval lies inside the quantity's range (`bounds`). A paired direction is
the exception to "the interval decides": its sign-flip p-values decide (vitheory.core.claims, `decide`),
and its Student-t interval is shown for the size of the effect only. The sign-flip test is exact (every
one of the 2^n sign patterns) up to `EXACT_SIGN_FLIP_UNITS` seeds; above, its p-values count
`SIGN_FLIP_DRAWS` random patterns, an estimate. tests/core/test_coverage.py measures each kind's
coverage, one side at a time, at the unit counts the default run uses. Each row's `check` tests its
assumption on the units at hand (a mean's skewness, a paired direction's symmetry) and, where it fails,
says by how much the interval is off at that skewness and unit count (a simulation of gamma-shaped units).
"""

from __future__ import annotations

import functools
import itertools
import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
from scipy import stats

from vitheory.core.config import NON_NEGATIVE, Rule, Section, at_least, knob

Samples = Mapping[str, Sequence[Any]]  # group -> its independent units
Measured = dict[str, float | None]

# the group of one unit that holds a claim's run settings (a chance level, a step budget): no spread
SETTINGS_GROUP = "settings"
MEAN, LOG, SHARE, MEDIAN, PAIRED, STEP, COUNTED = "mean", "log", "share", "median", "paired", "step", "counted"
GROUPED = (SHARE, MEDIAN, PAIRED)  # the kinds taken over the units of one named group
UNBOUNDED = (-math.inf, math.inf)
EXACT_SIGN_FLIP_UNITS = 16  # up to this many units the sign-flip test counts all 2^n patterns
SIGN_FLIP_DRAWS = 1 << 16  # beyond, this many random sign patterns


@dataclass(frozen=True)
class IntervalSettings(Section):
    """params.yaml `report`: the intervals' confidence and the bootstrap's resamples and seed."""

    confidence: float = knob(Rule(lambda v: 0.5 <= v < 1, "in [0.5, 1)"))
    bootstrap: int = knob(at_least(100))
    seed: int = knob(NON_NEGATIVE)

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
    p_values: tuple[float, float] | None = None  # PAIRED: one-sided p for (greater, smaller than the threshold)
    exact: bool | None = None  # PAIRED: the p-values counted every sign pattern (None: no test ran)
    unmeasured: int = 0  # bootstrap resamples on which the quantity could not be measured

    @property
    def ends(self) -> tuple[float | None, float | None]:
        return self.low, self.high


class Declared(Protocol):
    """What a method reads of a criterion (vitheory.core.claims.Criterion)."""

    @property
    def quantity(self) -> str: ...
    @property
    def threshold(self) -> float: ...
    @property
    def group(self) -> str | None: ...
    @property
    def bounds(self) -> tuple[float, float]: ...


@dataclass(frozen=True)
class Measurement:
    """A claim's units, its statistics and their value on all the units: what every method measures from.
    `key` (the claim's id and setting) seeds each random draw, so that an interval does not depend on which
    other claims ran. The delete-one values and the bootstrap's resamples are measured once, when a method
    first asks for them."""

    statistics: Callable[[Samples], Measured]
    samples: Samples
    measured: Measured
    cfg: IntervalSettings
    key: str

    @functools.cached_property
    def left_out(self) -> dict[str, list[Measured]]:
        """Each group's delete-one measurements (a group of one unit, a setting, has none)."""
        return {group: [self.statistics({**self.samples, group: [*units[:i], *units[i + 1:]]})
                        for i in range(len(units))]
                for group, units in self.samples.items() if len(units) > 1}

    @functools.cached_property
    def resampled(self) -> list[Measured]:
        """The statistics of each bootstrap resample."""
        rng = np.random.default_rng([self.cfg.seed, zlib.crc32(self.key.encode())])
        return [self.statistics(resample(self.samples, rng)) for _ in range(self.cfg.bootstrap)]

    def per_unit(self, quantity: str, group: str) -> list[float | None]:
        """The quantity measured on each unit of `group` alone (the other groups whole): a seed's own value of
        a median, share or paired difference over seeds."""
        return [self.statistics({**self.samples, group: [unit]})[quantity] for unit in self.samples[group]]

    def moving(self) -> dict[str, int]:
        """The groups of more than one unit, and how many each has."""
        return {group: len(units) for group, units in self.samples.items() if len(units) > 1}


def resample(samples: Samples, rng: np.random.Generator) -> dict[str, list[Any]]:
    """Each group's units drawn with replacement, as many as it has."""
    return {group: [units[i] for i in rng.integers(0, len(units), len(units))] for group, units in samples.items()}


def clip(low: float, high: float, bounds: tuple[float, float]) -> tuple[float, float]:
    return max(low, bounds[0]), min(high, bounds[1])


def _jackknife(value: float | None, left_out: dict[str, list[Measured]], quantity: str, confidence: float,
               transform: Callable[[float], float] = lambda x: x) -> tuple[tuple[float, float] | None, dict, float | None]:
    """Student-t on `transform` of the quantity: the point value plus and minus t_df times the square root of
    the groups' summed jackknife variances (n - 1) / n * sum_i (theta_(i) - mean theta_(.))^2, with
    Welch-Satterthwaite degrees of freedom; (interval, units, df). None for the interval when
    the quantity, or one of its leave-one-out values, cannot be measured or leaves the transform's domain."""
    try:
        centre = transform(value)
        parts = []
        for group, measured in left_out.items():
            values = [m[quantity] for m in measured]
            if None in values:
                return None, {}, None
            parts.append((group, len(values), np.asarray([transform(v) for v in values], dtype=float)))
    except (TypeError, ValueError):  # None, or outside the transform's domain (the log of 0)
        return None, {}, None
    if not math.isfinite(centre) or not all(np.isfinite(v).all() for _, _, v in parts):
        return None, {}, None
    moving = []
    for group, n, values in parts:
        # equal up to rounding: this group does not move the quantity
        if np.ptp(values) > 1e-12 * max(1.0, float(np.abs(values).max())):
            moving.append((group, n, float((n - 1) / n * ((values - values.mean()) ** 2).sum())))
    if not moving:
        return (centre, centre), {}, None
    variance = sum(v for _, _, v in moving)
    df = variance ** 2 / sum(v ** 2 / (n - 1) for _, n, v in moving)
    half = float(stats.t.ppf((1 + confidence) / 2, df)) * math.sqrt(variance)
    return (centre - half, centre + half), {group: n for group, n, _ in moving}, df


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


@functools.cache
def every_sign_pattern(n: int) -> np.ndarray:
    return np.array(list(itertools.product((1.0, -1.0), repeat=n)))


def sign_flip_p_values(values: Sequence[float], threshold: float, rng: np.random.Generator) -> tuple[float, float]:
    """One-sided p-values of the sum of (value - threshold) under random signs: (P(T >= observed),
    P(T <= observed)); exact over all 2^n patterns up to EXACT_SIGN_FLIP_UNITS units, else estimated from
    SIGN_FLIP_DRAWS random ones. The smallest possible is 1 / 2^n."""
    shifted = np.asarray(values, dtype=float) - threshold
    n = len(shifted)
    if n <= EXACT_SIGN_FLIP_UNITS:
        signs = every_sign_pattern(n)
    else:  # the observed pattern (all +1) is always among them
        signs = np.vstack([np.ones(n), rng.choice((1.0, -1.0), size=(SIGN_FLIP_DRAWS - 1, n))])
    sums, observed = signs @ shifted, shifted.sum()
    tolerance = 1e-12 * max(1.0, float(np.abs(shifted).sum()))
    return float((sums >= observed - tolerance).mean()), float((sums <= observed + tolerance).mean())


def _student_t(c: Declared, m: Measurement) -> Interval:
    ends, units, df = _jackknife(m.measured[c.quantity], m.left_out, c.quantity, m.cfg.confidence)
    return Interval(*(clip(*ends, c.bounds) if ends else (None, None)), m.cfg.confidence, units, df)


def _log_student_t(c: Declared, m: Measurement) -> Interval:
    ends, units, df = _jackknife(m.measured[c.quantity], m.left_out, c.quantity, m.cfg.confidence, _log)
    ends = clip(math.exp(ends[0]), math.exp(ends[1]), c.bounds) if ends else (None, None)
    return Interval(*ends, m.cfg.confidence, units, df)


def _clopper_pearson(c: Declared, m: Measurement) -> Interval:
    value, n = m.measured[c.quantity], len(m.samples[c.group])
    if value is None:
        return Interval(None, None, None, {})
    k = round(value * n)
    if abs(value * n - k) > 1e-9:
        raise ValueError(f"{c.quantity} = {value} is not a share of the {n} units of {c.group}")
    return Interval(*clopper_pearson(k, n, m.cfg.confidence), m.cfg.confidence, {c.group: n})


def _order_statistics(c: Declared, m: Measurement) -> Interval:
    values = m.per_unit(c.quantity, c.group)
    if None in values:  # truly undefined on some seed (a censored one is infinite, not None)
        return Interval(None, None, None, {})
    ordered = sorted(values)
    r, coverage = order_statistic_ranks(len(ordered), m.cfg.confidence)
    return Interval(*clip(ordered[r - 1], ordered[-r], c.bounds), coverage,
                    {c.group: len(ordered)} if ordered[0] != ordered[-1] else {})


def _sign_flip(c: Declared, m: Measurement) -> Interval:
    """The Student-t interval, shown, and the sign-flip p-values, which decide."""
    interval = _student_t(c, m)
    values = m.per_unit(c.quantity, c.group)
    if None in values or not all(math.isfinite(v) for v in values):
        return interval
    rng = np.random.default_rng([m.cfg.seed, zlib.crc32(f"{m.key}{c.quantity}".encode())])
    return replace(interval, p_values=sign_flip_p_values(values, c.threshold, rng),
                   exact=len(values) <= EXACT_SIGN_FLIP_UNITS)


def _counted(c: Declared, m: Measurement) -> Interval:
    """No interval: the value itself at both ends, counted over every case of a fixed construction."""
    value = m.measured[c.quantity]
    return Interval(value, value, None if value is None else 1.0, {})


def _percentile_bootstrap(c: Declared, m: Measurement) -> Interval:
    """The order statistics just outside each tail of the resamples, so that an infinite, censored value
    stays infinite. Unmeasurable resamples are counted, not dropped: when more of them than one tail's share,
    the interval cannot be placed."""
    values = np.asarray([math.nan if r[c.quantity] is None else float(r[c.quantity]) for r in m.resampled])
    unmeasured = int(np.isnan(values).sum())
    finite = values[~np.isnan(values)]
    if unmeasured > m.cfg.tail * len(values) or not len(finite):
        return Interval(None, None, m.cfg.confidence, {}, unmeasured=unmeasured)
    low = float(np.quantile(finite, m.cfg.tail, method="lower"))
    high = float(np.quantile(finite, 1 - m.cfg.tail, method="higher"))
    return Interval(*clip(low, high, c.bounds), m.cfg.confidence, m.moving() if low != high else {},
                    unmeasured=unmeasured)


ASSUMPTION_REPLICATES = 4000  # simulated runs behind a check's stated coverage: Monte Carlo error about 0.4%


def _skewness(values: Sequence[float]) -> float | None:
    """The sample skewness (bias-corrected), None with under 3 values, a non-finite one or no spread."""
    values = np.asarray(values, dtype=float)
    if len(values) < 3 or not np.isfinite(values).all() or np.ptp(values) == 0:
        return None
    return float(stats.skew(values, bias=False))


def _gamma_units(skewness: float, n: int, seed: int) -> tuple[np.ndarray, float]:
    """ASSUMPTION_REPLICATES runs of n gamma units of that skewness (shape 4 / skewness^2; reflected when
    negative), and their true mean."""
    shape = 4 / skewness ** 2
    units = np.random.default_rng(seed).gamma(shape, 1.0, (ASSUMPTION_REPLICATES, n))
    return (units, shape) if skewness > 0 else (-units, -shape)


@functools.cache
def skewed_mean_coverage(skewness: float, n: int, confidence: float) -> float:
    """The simulated coverage of Student-t's interval of the mean of n units skewed as a gamma of that
    skewness: what a mean's interval covers when its units are that far from normal."""
    units, truth = _gamma_units(skewness, n, seed=n)
    half = stats.t.ppf((1 + confidence) / 2, n - 1) * units.std(axis=1, ddof=1) / math.sqrt(n)
    return float((np.abs(units.mean(axis=1) - truth) <= half).mean())


@functools.cache
def skewed_sign_flip_false_holds(skewness: float, n: int, confidence: float) -> float:
    """The simulated rate at which the sign-flip test rejects one side (the more often rejected) at the tail when
    the seeds' values are skewed as a gamma of that skewness with mean exactly on the threshold: its false
    holds where the symmetric null it assumes is not so (every sign pattern up to 10 seeds, 4096 drawn above)."""
    units, truth = _gamma_units(skewness, n, seed=n)
    centred = units - truth
    rng = np.random.default_rng(n)
    signs = every_sign_pattern(n) if n <= 10 else rng.choice((1.0, -1.0), size=(4096, n))
    sums, observed = signs @ centred.T, centred.sum(axis=1)
    tail = (1 - confidence) / 2
    greater = ((sums >= observed - 1e-12).mean(axis=0) <= tail).mean()
    smaller = ((sums <= observed + 1e-12).mean(axis=0) <= tail).mean()
    return float(max(greater, smaller))


# When a check flags: Bradley's liberal criterion (Br. J. Math. Stat. Psychol. 31, 1978), a test or interval
# counts as robust while its error rate stays within 1.5 times the nominal one (a paired test's false decisions
# within 1.5 x its tail, an interval's misses within 1.5 x its 1 - confidence), so that a small excess
# (8 seeds of skewness 0.4: 3.4% against 2.5%) is not flagged as a fault ...
ROBUST_FACTOR = 1.5
# ... and only where the units' skewness is evidence at all: beyond what normal units of that count show 95% of
# the time (the sample skewness of 10 normal units often reaches 0.7, whose gamma model decides 4.0% against
# 2.5%: without this, normal paired differences at 10 seeds were flagged about half the time)
SKEWNESS_EVIDENCE = 0.95


@functools.cache
def normal_skewness_bound(n: int) -> float:
    """The SKEWNESS_EVIDENCE quantile of |sample skewness| over ASSUMPTION_REPLICATES samples of n normal units."""
    units = np.random.default_rng(n).standard_normal((ASSUMPTION_REPLICATES, n))
    return float(np.quantile(np.abs(stats.skew(units, axis=1, bias=False)), SKEWNESS_EVIDENCE))


def _skewed_beyond_normal(skew: float | None, n: int) -> bool:
    return skew is not None and round(abs(skew), 1) > 0 and abs(skew) > normal_skewness_bound(n)


def _mean_check(c: Declared, m: Measurement, transform: Callable[[float], float] = lambda x: x) -> str | None:
    """Student-t's coverage at the most skewed moving group's skewness (of its delete-one values, on the
    interval's scale: a mean's are its units reflected) and unit count, when that skewness is beyond normal
    units' and the interval misses more than ROBUST_FACTOR times its nominal rate there."""
    skewed = []
    for group, measured in m.left_out.items():
        try:
            values = [transform(v[c.quantity]) for v in measured]
        except (TypeError, ValueError):
            return None
        if (skew := _skewness(values)) is not None and np.ptp(values) > 1e-12 * max(1.0, float(np.abs(values).max())):
            skewed.append((abs(skew), group, len(values)))
    if not skewed:
        return None
    skew, group, n = max(skewed)
    if not _skewed_beyond_normal(skew, n):
        return None
    coverage = skewed_mean_coverage(round(skew, 1), n, m.cfg.confidence)
    if 1 - coverage <= ROBUST_FACTOR * (1 - m.cfg.confidence):
        return None
    return (f"approximate: units skewed ({group}: skewness {skew:.1f}), coverage about {coverage:.0%} at {n} seeds "
            "(gamma units of that skewness)")


def _log_check(c: Declared, m: Measurement) -> str | None:
    return _mean_check(c, m, _log)


def _paired_check(c: Declared, m: Measurement) -> str | None:
    """The sign-flip test's false holds at the seeds' own skewness and count (its null is symmetry about the
    threshold), when that skewness is beyond normal units' and the test decides falsely more than
    ROBUST_FACTOR times its tail there."""
    values = m.per_unit(c.quantity, c.group)
    skew = None if None in values else _skewness(values)
    if not _skewed_beyond_normal(skew, len(values)):
        return None
    false_holds = skewed_sign_flip_false_holds(round(skew, 1), len(values), m.cfg.confidence)
    if false_holds <= ROBUST_FACTOR * m.cfg.tail:
        return None
    return (f"approximate: per-seed values skewed (skewness {skew:.1f}), the sign-flip test falsely decides about "
            f"{false_holds:.0%} (against {m.cfg.tail:.1%}) at {len(values)} seeds (gamma values of that skewness)")


Draws = Mapping[str, np.ndarray]  # group -> (runs, m): indices of the units each planned run draws
DrawnRuns = tuple[Sequence[float | None], Sequence[Interval]]  # each run's value and interval
PLAN_SIGN_FLIPS = 4096  # random sign patterns of a planned paired test over EXACT_SIGN_FLIP_UNITS seeds


def _unit_values(c: Declared, m: Measurement, groups: Sequence[str], transform: Callable[[float], float]
                 ) -> dict[str, np.ndarray] | None:
    """What each unit of each group adds to `transform` of the quantity: the delete-one jackknife's
    pseudo-values n theta - (n - 1) theta_(i) (a mean's units themselves; the linear part of any other
    statistic), whose Student-t interval is the jackknife's. None when one is unmeasured."""
    try:
        centre = transform(m.measured[c.quantity])
        return {group: np.array([len(m.left_out[group]) * centre - (len(m.left_out[group]) - 1)
                                 * transform(v[c.quantity]) for v in m.left_out[group]]) for group in groups}
    except (TypeError, ValueError):  # None, or the log of a value that is not positive
        return None


def _student_t_runs(c: Declared, m: Measurement, draws: Draws, rng: np.random.Generator,
                    log: bool = False) -> DrawnRuns | None:
    """Student-t on each run's drawn pseudo-values, Welch's degrees of freedom across groups (on the log
    scale for LOG): `_jackknife` on each run, whose pseudo-values are its units' own."""
    units = _unit_values(c, m, list(draws), _log if log else float)
    if units is None or not all(np.isfinite(u).all() for u in units.values()):
        return None
    drawn = {group: units[group][indices] for group, indices in draws.items()}
    n = next(iter(drawn.values())).shape[1]
    values = sum(d.mean(axis=1) for d in drawn.values()) - sum(u.mean() for u in units.values())
    values = values + (_log if log else float)(m.measured[c.quantity])
    parts = [d.var(axis=1, ddof=1) / n for d in drawn.values()]
    variance = sum(parts)
    df = variance ** 2 / np.maximum(sum(v ** 2 / (n - 1) for v in parts), 1e-300)
    half = stats.t.ppf((1 + m.cfg.confidence) / 2, np.maximum(df, 1)) * np.sqrt(variance)
    low, high = values - half, values + half
    if log:
        values, low, high = np.exp(values), np.exp(low), np.exp(high)
    return values, [Interval(*clip(lo, hi, c.bounds), m.cfg.confidence, {}) for lo, hi in zip(low, high)]


def _per_unit_drawn(c: Declared, m: Measurement, draws: Draws, finite: bool = True) -> np.ndarray | None:
    """The per-unit values of the criterion's group, drawn (runs x m); None when one is unmeasured (or, with
    `finite`, infinite)."""
    values = m.per_unit(c.quantity, c.group)
    if None in values or (finite and not all(math.isfinite(v) for v in values)):
        return None
    return np.asarray(values, dtype=float)[draws[c.group]]


def _clopper_pearson_runs(c: Declared, m: Measurement, draws: Draws, rng: np.random.Generator
                          ) -> DrawnRuns | None:
    """Each run's share of yes among its drawn units and that share's Clopper-Pearson interval."""
    drawn = _per_unit_drawn(c, m, draws)
    if drawn is None:
        return None
    n = drawn.shape[1]
    k = np.rint(drawn.sum(axis=1)).astype(int)
    return k / n, [Interval(*clopper_pearson(int(ki), n, m.cfg.confidence), m.cfg.confidence, {}) for ki in k]


def _order_statistics_runs(c: Declared, m: Measurement, draws: Draws, rng: np.random.Generator
                           ) -> DrawnRuns | None:
    """Each run's median and its order-statistics interval (a censored, infinite unit at its end)."""
    drawn = _per_unit_drawn(c, m, draws, finite=False)
    if drawn is None:
        return None
    ordered = np.sort(drawn, axis=1)
    n = ordered.shape[1]
    r, coverage = order_statistic_ranks(n, m.cfg.confidence)
    return np.median(ordered, axis=1), [Interval(*clip(low, high, c.bounds), coverage, {})
                                        for low, high in zip(ordered[:, r - 1], ordered[:, n - r])]


def sign_flip_rows(drawn: np.ndarray, threshold: float, rng: np.random.Generator) -> list[tuple[float, float]]:
    """`sign_flip_p_values` of each row: every sign pattern up to EXACT_SIGN_FLIP_UNITS seeds, PLAN_SIGN_FLIPS
    random ones (the same for every row, all +1 among them) above: the test's own p-values, estimated less
    finely than the verdict's (their Monte Carlo error at the 2.5% tail, 0.2%, is small beside the power's)."""
    shifted = drawn - threshold
    n = shifted.shape[1]
    signs = (every_sign_pattern(n) if n <= EXACT_SIGN_FLIP_UNITS else
             np.vstack([np.ones(n), rng.choice((1.0, -1.0), size=(PLAN_SIGN_FLIPS - 1, n))]))
    found = []
    for rows in np.array_split(shifted, max(1, len(shifted) // 50)):  # 50 rows: a few hundred MB at most
        sums, observed = signs @ rows.T, rows.sum(axis=1)
        tolerance = 1e-12 * np.maximum(1.0, np.abs(rows).sum(axis=1))
        found += list(zip((sums >= observed - tolerance).mean(axis=0), (sums <= observed + tolerance).mean(axis=0)))
    return found


def _sign_flip_runs(c: Declared, m: Measurement, draws: Draws, rng: np.random.Generator) -> DrawnRuns | None:
    """Each run's mean and Student-t interval (shown) with its sign-flip p-values (which decide)."""
    drawn = _per_unit_drawn(c, m, draws)
    if drawn is None:
        return None
    n = drawn.shape[1]
    values = drawn.mean(axis=1)
    half = stats.t.ppf((1 + m.cfg.confidence) / 2, n - 1) * drawn.std(axis=1, ddof=1) / math.sqrt(n)
    return values, [Interval(*clip(v - h, v + h, c.bounds), m.cfg.confidence, {}, p_values=p)
                    for v, h, p in zip(values, half, sign_flip_rows(drawn, c.threshold, rng))]


def _percentile_bootstrap_runs(c: Declared, m: Measurement, draws: Draws, rng: np.random.Generator
                               ) -> DrawnRuns:
    """Each run measured again on its drawn units (the other groups whole) and its own percentile bootstrap,
    of the verdict's resamples, seeded by the run's index: the verdict's method, run by run."""
    runs, n = next(iter(draws.values())).shape
    values, found = [], []
    for r in range(runs):
        samples = {**m.samples, **{group: [m.samples[group][i] for i in indices[r]] for group, indices in draws.items()}}
        run = Measurement(m.statistics, samples, m.statistics(samples), m.cfg, f"{m.key}{c.quantity} run {r}")
        values.append(run.measured[c.quantity])
        found.append(_percentile_bootstrap(c, run))
    return values, found


def _paired_units(confidence: float) -> int:
    """The fewest seeds whose exact sign-flip test can reject at the tail: 2^-n <= (1 - confidence) / 2."""
    return math.ceil(math.log2(2 / (1 - confidence)))


def _median_units(confidence: float) -> int:
    """The fewest seeds whose [min, max] covers the median at the confidence."""
    return next(n for n in range(2, 64) if 1 - 2 * 0.5 ** n >= confidence)


@dataclass(frozen=True)
class Method:
    """One row of the table: the method's name (claims.json's `method`), the function that makes the
    interval, what the kind is and how the method treats it (REPORT.md's header), what it assumes of the
    units, and what a seed plan (vitheory.core.planning) needs of it: `runs`, the same method applied to many
    drawn runs at once (each run's value and interval, as `interval` would make them on that run's units;
    None when the units cannot be drawn, one unmeasured), the fewest units at which it can decide at all,
    how many runs a plan draws per candidate count, and how far beyond its units a plan may reach."""

    name: str
    interval: Callable[[Declared, Measurement], Interval]
    description: str
    assumptions: str
    runs: Callable[[Declared, Measurement, Draws, np.random.Generator], DrawnRuns | None]
    # the assumptions checked on the units: None when they hold, else what the interval is and by how much
    check: Callable[[Declared, Measurement], str | None] = lambda criterion, measurement: None
    smallest_units: Callable[[float], int] = lambda confidence: 2
    plan_runs: int = 400  # the planned power's Monte Carlo error about 0.02 at 0.8
    plan_growth: int | None = None  # a plan counts up to this many times the units it has (None: no limit)


METHODS = {
    MEAN: Method("Student-t", _student_t,
                 "a mean over seeds, or a difference of groups' means: Student-t with the delete-one jackknife's "
                 "standard error (exactly Student-t's for one group, Welch's for a difference of groups)",
                 "independent seeds whose mean is close to normal: roughly symmetric units without heavy tails "
                 "(units of skewness 1 miss on their long side up to twice the tail; of skewness 2, exponential, "
                 "it covers about 88-92% at 5 to 20 seeds, tests/core/test_coverage.py); checked: each moving "
                 "group's skewness, the coverage at it stated where the skewness is beyond normal units' and the "
                 "interval misses more than 1.5 times its nominal rate there",
                 _student_t_runs, _mean_check),
    LOG: Method("Student-t, log scale", _log_student_t,
                "a positive, skewed quantity (a ratio, an eigenvalue): the same Student-t interval on the log of "
                "the quantity, exponentiated",
                "independent seeds, a positive quantity whose log is close to normal (a geometric mean of "
                "lognormal units, not an arithmetic mean of skewed ones); checked: the skewness on the log scale, "
                "the coverage at it stated as a mean's is",
                functools.partial(_student_t_runs, log=True), _log_check),
    SHARE: Method("Clopper-Pearson", _clopper_pearson,
                  "a share of seeds (a yes or no per seed): the exact binomial interval, at least its nominal "
                  "coverage and always inside [0, 1]",
                  "independent seeds, each a yes or no with the same chance; no shape",
                  _clopper_pearson_runs),
    MEDIAN: Method("order statistics", _order_statistics,
                   "a median over seeds: the distribution-free interval between two of the seeds' ordered values (a "
                   "censored seed ordered at its infinite end), as near its nominal coverage as the seeds allow (at "
                   "5 seeds [min, max] covers 93.75%)",
                   "independent seeds from one continuous distribution (ties make it conservative); no shape",
                   _order_statistics_runs, smallest_units=_median_units),
    PAIRED: Method("sign-flip", _sign_flip,
                   "a direction measured within each seed (a difference on the same seed): decided by the sign-flip "
                   "test of the seeds' values against the threshold, one-sided each way, not by the interval shown "
                   "beside it (Student-t's, for the size of the effect); the test is exact, over all 2^n sign "
                   f"patterns, up to {EXACT_SIGN_FLIP_UNITS} seeds, and above {EXACT_SIGN_FLIP_UNITS} estimates its "
                   f"p-values from {SIGN_FLIP_DRAWS:,} random sign patterns",
                   "independent seeds whose values, where the effect sits on the threshold, are symmetric about it "
                   "(the sign-flip null: seeds of skewness 2 with mean on the threshold are decided falsely up to "
                   "about 15% against 2.5%); the interval shown assumes what a mean's does; checked: the seeds' "
                   "skewness, the false decisions at it stated where the skewness is beyond normal units' and they "
                   "exceed 1.5 times the tail there",
                   _sign_flip_runs, _paired_check, smallest_units=_paired_units),
    STEP: Method("percentile bootstrap", _percentile_bootstrap,
                 "a step statistic over the whole grid (an indicator, a first sample size reached), whose "
                 "leave-one-out values do not move: the percentile bootstrap over seeds, its ends the order "
                 "statistics outside the tails",
                 "independent seeds, enough of them that resampling them stands for drawing new ones (over 3 "
                 "seeds a percentile bootstrap covers about 75%)",
                 # each planned run is measured again on each of its resamples: fewer runs, and no count
                 # beyond 8 times its seeds (a grid's step statistic is not extrapolated far)
                 _percentile_bootstrap_runs, plan_runs=200, plan_growth=8),
    COUNTED: Method("counted exactly", _counted,
                    "a number counted over every case of a construction that has no seed to vary (every patch of "
                    "one model written down): exact, its value decides, with no interval and no seeds to plan",
                    "the construction is fixed and every case is counted: nothing is sampled",
                    lambda criterion, measurement, draws, rng: None),
}


def method_name(kind: str, interval: Interval) -> str:
    """The method's name as claims.json records it: a sign-flip test says whether it was exact."""
    name = METHODS[kind].name
    if interval.exact is None:
        return name
    return f"exact {name}" if interval.exact else f"{name}, {SIGN_FLIP_DRAWS:,} random sign patterns"
