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
criterion says how many seeds its own decision would need to decide with power POWER (`seeds_needed`),
planned from its units as they are (runs resampled from them, or a share's exact binomial power), never
from a normal spread they may not have: stalled or skewed seeds count as what they are.
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
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from scipy import stats

from vitheory.core.intervals import (EXACT_SIGN_FLIP_UNITS, GROUPED, LOG, MEDIAN, METHODS, PAIRED, SHARE,
                                     STEP, UNBOUNDED, Interval, IntervalSettings, Measured,
                                     Measurement, Samples, clip, clopper_pearson, every_sign_pattern, method_name,
                                     order_statistic_ranks, smallest_decisive_units)
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


def _measurement(claim: Claim, samples: Samples, cfg: IntervalSettings, setting: str) -> Measurement:
    """The claim's units and statistics, keyed by the claim and its setting (what seeds its random draws)."""
    return Measurement(claim.statistics, samples, claim.statistics(samples), cfg, f"{claim.id}{setting}")


def _intervals(claim: Claim, measurement: Measurement) -> dict[str, Interval]:
    return {quantity: METHODS[c.kind].interval(c, measurement) for quantity, c in sorted(_declared(claim).items())}


def intervals(claim: Claim, samples: Samples, cfg: IntervalSettings, setting: str = "") -> dict[str, Interval]:
    """The interval of each criterion's and condition's quantity, by the method its kind names in `METHODS`."""
    return _intervals(claim, _measurement(claim, samples, cfg, setting))


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


def labelled_checks(judged: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, check) of every criterion, then every condition (its label after CONDITION_LABEL), of one
    judged setting of a claims.json record: how the report, the README and the decisive preset name them."""
    return [*judged["criteria"].items(),
            *((f"{CONDITION_LABEL}{name}", check) for name, check in judged["conditions"].items())]


@dataclass(frozen=True)
class Plan:
    """About the fewest seeds per group at which the criterion's own decision (`decide`, its kind's method)
    reaches the verdict this run's value points to with probability POWER, and how: `by` EXACT, the binomial
    power at the measured share; or RESAMPLED, the share of runs of that many seeds drawn with replacement
    from this run's own units that decide (no shape assumed: stalled or skewed seeds count as they are).
    `seeds` None: none up to `searched` decides (`searched` set), or nothing to plan (no value, a value on
    its threshold, or no units that move it)."""

    seeds: int | None
    by: str
    power: float | None = None  # at `seeds`
    monte_carlo_error: float | None = None  # the power's standard error (0: exact)
    runs: int | None = None  # the drawn runs behind the power
    searched: int | None = None  # the largest count tried

    def record(self) -> dict[str, Any]:
        return {"by": self.by, "power": self.power, "monte_carlo_error": self.monte_carlo_error, "runs": self.runs,
                "searched_up_to": self.searched}


EXACT, RESAMPLED = "exact binomial", "resampling the units"
PLAN_RUNS = 400  # runs drawn per candidate count: the planned power's Monte Carlo error about 0.02 at 0.8
STEP_PLAN_RUNS = 200  # a step statistic is measured again on each run, which may take milliseconds: fewer runs
STEP_PLAN_GROWTH = 8  # and a step statistic (over a grid) is planned up to 8 times its seeds, not extrapolated beyond
PLAN_SIGN_FLIPS = 4096  # random sign patterns of a planned paired test over EXACT_SIGN_FLIP_UNITS seeds
PLAN_PRECISION = 0.05  # a plan's count is found to within 5% (the power's Monte Carlo error moves it more)
SHARE_LIMIT = 1_000_000  # a share's exact plan counts this far; a resampled plan AFFORDABLE_SEEDS


def _fewest(reaches: Callable[[int], bool], start: int, limit: int) -> int | None:
    """About the fewest count in [start, limit] that `reaches` POWER, doubling from `start` and then bisecting
    to within PLAN_PRECISION (power rises with the count, up to a resampled one's Monte Carlo error); None
    when `limit` does not."""
    low, high = start - 1, start
    while not reaches(high):
        if high >= limit:
            return None
        low, high = high, min(2 * high, limit)
    while high - low > max(1, math.floor(PLAN_PRECISION * high)):
        middle = (low + high) // 2
        low, high = (low, middle) if reaches(middle) else (middle, high)
    return high


def _share_power(c: Criterion, value: float, m: int, confidence: float) -> float:
    """P(the Clopper-Pearson interval of k / m decides as `value` points) for k ~ Binomial(m, value), summed over
    the k within 8 standard deviations of m value (the rest weigh under 1e-15)."""
    verdict = HOLDS if c.holds(value) else FAILS
    reach = 8 * math.sqrt(m * value * (1 - value)) + 1
    ks = range(max(0, math.floor(m * value - reach)), min(m, math.ceil(m * value + reach)) + 1)
    weights = stats.binom.pmf(list(ks), m, value)
    return float(sum(w for k, w in zip(ks, weights) if c.verdict(k / m, clopper_pearson(k, m, confidence)) == verdict))


def _unit_values(c: Criterion, m: Measurement, groups: Sequence[str]) -> dict[str, np.ndarray] | None:
    """What each unit adds to the quantity, per group that moves it: a seed's own value for a median or a
    paired direction; a mean's jackknife pseudo-values n theta - (n - 1) theta_(i) (on the log scale for LOG),
    the units themselves for a mean, the linear part of any other statistic. None when one is unmeasured."""
    try:
        if c.kind in (MEDIAN, PAIRED):
            return {c.group: np.asarray(m.per_unit(c.quantity, c.group), dtype=float)}
        scale = math.log if c.kind == LOG else float
        centre = scale(m.measured[c.quantity])
        return {group: np.array([len(m.left_out[group]) * centre - (len(m.left_out[group]) - 1) * scale(v[c.quantity])
                                 for v in m.left_out[group]]) for group in groups}
    except (TypeError, ValueError):  # None, or the log of a value that is not positive
        return None


def _drawn_intervals(c: Criterion, drawn: dict[str, np.ndarray], centre: float, cfg: IntervalSettings,
                     rng: np.random.Generator) -> tuple[np.ndarray, list[Interval]]:
    """Each run's value and interval by the kind's method, from its drawn units (runs x seeds per group):
    Student-t on the pseudo-values' mean with Welch's degrees of freedom (a mean, on the log scale for LOG;
    a paired direction's, shown, beside its sign-flip p-values); the order statistics for a median."""
    runs, n = next(iter(drawn.values())).shape
    if c.kind == MEDIAN:
        ordered = np.sort(drawn[c.group], axis=1)
        r, coverage = order_statistic_ranks(n, cfg.confidence)
        return np.median(ordered, axis=1), [Interval(*clip(low, high, c.bounds), coverage, {})
                                            for low, high in zip(ordered[:, r - 1], ordered[:, n - r])]
    centre = math.log(centre) if c.kind == LOG else centre
    values = centre + sum(units.mean(axis=1) - units.mean() for units in drawn.values())
    parts = [units.var(axis=1, ddof=1) / n for units in drawn.values()]
    variance = sum(parts)
    df = variance ** 2 / np.maximum(sum(v ** 2 / (n - 1) for v in parts), 1e-300)
    half = stats.t.ppf((1 + cfg.confidence) / 2, np.maximum(df, 1)) * np.sqrt(variance)
    if c.kind == LOG:
        values, low, high = np.exp(values), np.exp(values - half), np.exp(values + half)
    else:
        low, high = values - half, values + half
    p_values = _sign_flip_rows(drawn[c.group], c.threshold, rng) if c.kind == PAIRED else [None] * runs
    return values, [Interval(*clip(lo, hi, c.bounds), cfg.confidence, {}, p_values=p)
                    for lo, hi, p in zip(low, high, p_values)]


def _sign_flip_rows(drawn: np.ndarray, threshold: float, rng: np.random.Generator) -> list[tuple[float, float]]:
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


class _Resampled:
    """Runs of a candidate number of seeds per group drawn with replacement from this run's own units (the
    groups that move the quantity), the same draws (their first m) at every count, seeded from params
    `report.seed`, the claim and the quantity: reproducible, and the power moves with m, not with the draws.
    Every kind but STEP draws what each unit adds (`_unit_values`) and makes the runs' intervals at once. A
    step statistic is measured again on each run; its percentile bootstrap's ends are placed by the bootstrap
    principle, each run's value moved by the runs' own tail quantiles about this run's value, rather than
    by resampling inside every run (runs x resamples measurements of a statistic that may take milliseconds)."""

    def __init__(self, c: Criterion, measurement: Measurement, groups: Sequence[str]):
        self.c, self.measurement = c, measurement
        self.verdict = HOLDS if c.holds(measurement.measured[c.quantity]) else FAILS
        self.runs = STEP_PLAN_RUNS if c.kind == STEP else PLAN_RUNS
        self.seed = [measurement.cfg.seed, zlib.crc32(f"{measurement.key}{c.quantity}".encode())]
        rng = np.random.default_rng(self.seed)
        self.units = None if c.kind == STEP else _unit_values(c, measurement, groups)
        self.draws = {group: rng.integers(0, len(measurement.samples[group]), (self.runs, AFFORDABLE_SEEDS))
                      for group in (self.units or groups)}

    def plannable(self) -> bool:
        return self.c.kind == STEP or (self.units is not None and all(np.isfinite(u).all() or self.c.kind == MEDIAN
                                                                       for u in self.units.values()))

    def power(self, m: int) -> float:
        cfg = self.measurement.cfg
        if self.c.kind == STEP:
            values, found = self._step_intervals(m)
        else:
            drawn = {group: units[self.draws[group][:, :m]] for group, units in self.units.items()}
            values, found = _drawn_intervals(self.c, drawn, self.measurement.measured[self.c.quantity], cfg,
                                             np.random.default_rng(self.seed))
        return sum(decide(self.c, v, i, cfg) == self.verdict for v, i in zip(values, found)) / self.runs

    def _step_intervals(self, m: int) -> tuple[list[float | None], list[Interval]]:
        samples = self.measurement.samples
        values = [self.measurement.statistics({**samples, **{group: [samples[group][i] for i in draws[r, :m]]
                                                             for group, draws in self.draws.items()}})[self.c.quantity]
                  for r in range(self.runs)]
        measured = np.array([v for v in values if v is not None], dtype=float)
        if len(values) - len(measured) > self.measurement.cfg.tail * len(values):  # as the method: no interval
            return values, [Interval(None, None, None, {})] * len(values)
        centre, tail = self.measurement.measured[self.c.quantity], self.measurement.cfg.tail
        low = float(np.quantile(measured, tail, method="lower")) - centre
        high = float(np.quantile(measured, 1 - tail, method="higher")) - centre
        return values, [Interval(None, None, None, {}) if v is None else
                        Interval(*clip(_shifted(v, low), _shifted(v, high), self.c.bounds), None, {}) for v in values]


def _shifted(value: float, by: float) -> float:
    """value + by, where an infinite (censored) value stays infinite and an infinite shift reaches infinity."""
    return value if math.isinf(value) else value + by if not math.isnan(by) else math.inf


def seeds_needed(c: Criterion, measurement: Measurement, interval: Interval) -> Plan:
    """The seeds per group an inconclusive criterion would need, from more than it has now (the most units of
    a group that moves its quantity) and never fewer than its method can decide with: a share by its exact
    binomial power at the measured share, up to SHARE_LIMIT; every other kind by runs drawn from this run's
    units (`_Resampled`), up to AFFORDABLE_SEEDS (a step statistic up to STEP_PLAN_GROWTH times its seeds)."""
    value, cfg = measurement.measured[c.quantity], measurement.cfg
    if value is None or not interval.units or c.margin(value) == 0:
        return Plan(None, EXACT if c.kind == SHARE else RESAMPLED)
    start = max(max(interval.units.values()) + 1, smallest_decisive_units(c.kind, cfg.confidence))
    if c.kind == SHARE:
        found = _fewest(lambda m: _share_power(c, value, m, cfg.confidence) >= POWER, start, SHARE_LIMIT)
        return Plan(found, EXACT, None if found is None else _share_power(c, value, found, cfg.confidence), 0.0,
                    searched=SHARE_LIMIT)
    runs = _Resampled(c, measurement, sorted(interval.units))
    if not runs.plannable():
        return Plan(None, RESAMPLED)
    limit = min(AFFORDABLE_SEEDS, STEP_PLAN_GROWTH * (start - 1)) if c.kind == STEP else AFFORDABLE_SEEDS
    powers: dict[int, float] = {}
    found = _fewest(lambda m: powers.setdefault(m, runs.power(m)) >= POWER, start, max(limit, start))
    if found is None:
        return Plan(None, RESAMPLED, runs=runs.runs, searched=limit)
    power = powers[found]
    return Plan(found, RESAMPLED, power, math.sqrt(power * (1 - power) / runs.runs), runs.runs, limit)


def claim_verdict(verdicts: Sequence[str], conditions: Sequence[str] = ()) -> str:
    """INCONCLUSIVE whatever the criteria say when a condition of the measurement is not met; else FAILS if
    any criterion fails, HOLDS if all hold, else INCONCLUSIVE."""
    if any(v != HOLDS for v in conditions):
        return INCONCLUSIVE
    if FAILS in verdicts:
        return FAILS
    return HOLDS if all(v == HOLDS for v in verdicts) else INCONCLUSIVE


def _checks(criteria: Sequence[Criterion], measurement: Measurement, found: dict[str, Interval]
            ) -> dict[str, dict[str, Any]]:
    checks, cfg = {}, measurement.cfg
    for c in criteria:
        interval, value = found[c.quantity], measurement.measured[c.quantity]
        verdict = decide(c, value, interval, cfg)
        check = {"quantity": c.quantity, "threshold": f"{c.op} {c.threshold:g}", "source": c.source,
                 "kind": c.kind, "method": method_name(c.kind, interval), "interval": [interval.low, interval.high],
                 "coverage": interval.coverage, "units": interval.units, "df": interval.df,
                 "margin": c.margin(value), "verdict": verdict,
                 "assumption": METHODS[c.kind].check(c, measurement)}
        if interval.p_values is not None:
            check["p_values"] = {"greater": interval.p_values[0], "smaller": interval.p_values[1]}
        if c.kind == STEP:
            check["unmeasured_resamples"] = interval.unmeasured
        if c.smallest_effect is not None:
            check["smallest_effect"] = {"value": c.smallest_effect, "source": c.smallest_effect_source}
            if verdict == FAILS and c.negligible(interval.ends):
                check["reason"] = f"the effect, if any, is smaller than {c.smallest_effect:g}"
        if verdict == INCONCLUSIVE:
            plan = seeds_needed(c, measurement, interval)
            check["seeds_needed"], check["plan"] = plan.seeds, plan.record()
        checks[str(c)] = check
    return checks


def _judge(claim: Claim, samples: Samples, cfg: IntervalSettings, setting: str = "") -> dict[str, Any]:
    measurement = _measurement(claim, samples, cfg, setting)
    measured, found = measurement.measured, _intervals(claim, measurement)
    criteria = _checks(claim.criteria, measurement, found)
    conditions = _checks(claim.conditions, measurement, found)
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
