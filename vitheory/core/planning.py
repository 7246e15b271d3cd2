"""How many seeds an inconclusive criterion would need: its power plan, by the verdict's own method.

A plan draws runs of a candidate number of seeds per group with replacement from this run's own units (the
groups that move the quantity), decides each drawn run exactly as the report decides a criterion (its
kind's method in vitheory.core.intervals, `METHODS[kind].runs`, then `decide`: a step statistic's
percentile bootstrap inside each run, a paired direction's sign-flip test, a share's Clopper-Pearson
interval), and counts the runs that reach the verdict this run's value points to. The fewest count whose
share reaches POWER is the plan. No shape is assumed: stalled, bimodal or skewed seeds count as they are.
The same draws (their first m) serve every count, so the power moves with m and not with the draws; they
are seeded from params `report.seed`, the claim and the quantity, so a plan is reproducible.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vitheory.core.criteria import FAILS, HOLDS, Criterion, decide
from vitheory.core.intervals import METHODS, Interval, Measurement

POWER = 0.8  # the power at which a plan counts the seeds a criterion needs
AFFORDABLE_SEEDS = 1000  # beyond this, a power line says the effect is too small to decide, not a count
PLAN_PRECISION = 0.05  # a plan's count is found to within 5% (the power's Monte Carlo error moves it more)
DRAWN = "runs drawn from the units, each decided by its method"  # a plan's `by`


@dataclass(frozen=True)
class Plan:
    """About the fewest seeds per group at which the criterion's own decision reaches the verdict this run's
    value points to with probability POWER, measured on `runs` runs drawn from this run's units.
    `seeds` None: none up to `searched` decides (`searched` set), or nothing to plan (no value, a value on
    its threshold, units that cannot be drawn, or none that move it)."""

    seeds: int | None
    power: float | None = None  # at `seeds`
    monte_carlo_error: float | None = None  # the power's standard error
    runs: int | None = None  # the drawn runs behind the power
    searched: int | None = None  # the largest count tried
    by: str = DRAWN

    def record(self) -> dict[str, Any]:
        return {"by": self.by, "power": self.power, "monte_carlo_error": self.monte_carlo_error, "runs": self.runs,
                "searched_up_to": self.searched}


def fewest(reaches: Callable[[int], bool], start: int, limit: int) -> int | None:
    """About the fewest count in [start, limit] that `reaches` POWER, doubling from `start` and then bisecting
    to within PLAN_PRECISION (power rises with the count, up to its Monte Carlo error); None when `limit`
    does not."""
    low, high = start - 1, start
    while not reaches(high):
        if high >= limit:
            return None
        low, high = high, min(2 * high, limit)
    while high - low > max(1, math.floor(PLAN_PRECISION * high)):
        middle = (low + high) // 2
        low, high = (low, middle) if reaches(middle) else (middle, high)
    return high


class DrawnPower:
    """The share of runs of m seeds per group, drawn from this run's units in `groups`, that the criterion's
    method decides as this run's value points."""

    def __init__(self, c: Criterion, measurement: Measurement, groups: Sequence[str]):
        self.c, self.measurement = c, measurement
        self.method = METHODS[c.kind]
        self.verdict = HOLDS if c.holds(measurement.measured[c.quantity]) else FAILS
        self.seed = [measurement.cfg.seed, zlib.crc32(f"{measurement.key}{c.quantity}".encode())]
        rng = np.random.default_rng(self.seed)
        self.draws = {group: rng.integers(0, len(measurement.samples[group]),
                                          (self.method.plan_runs, AFFORDABLE_SEEDS)) for group in groups}

    def power(self, m: int) -> float | None:
        """The share at m seeds per group; None when the units cannot be drawn (one unmeasured)."""
        decided = self.method.runs(self.c, self.measurement, {group: d[:, :m] for group, d in self.draws.items()},
                                   np.random.default_rng(self.seed))
        if decided is None:
            return None
        cfg = self.measurement.cfg
        return sum(decide(self.c, v, i, cfg) == self.verdict for v, i in zip(*decided)) / self.method.plan_runs


def seeds_needed(c: Criterion, measurement: Measurement, interval: Interval) -> Plan:
    """The seeds per group an inconclusive criterion would need, from more than it has now (the most units of
    a group that moves its quantity) and never fewer than its method can decide with, up to AFFORDABLE_SEEDS
    (or the method's own limit, a multiple of its units)."""
    value, method = measurement.measured[c.quantity], METHODS[c.kind]
    if value is None or not interval.units or c.margin(value) == 0:
        return Plan(None)
    start = max(max(interval.units.values()) + 1, method.smallest_units(measurement.cfg.confidence))
    limit = AFFORDABLE_SEEDS if method.plan_growth is None else min(AFFORDABLE_SEEDS, method.plan_growth * (start - 1))
    limit = max(limit, start)
    drawn = DrawnPower(c, measurement, sorted(interval.units))
    powers = {start: drawn.power(start)}
    if powers[start] is None:
        return Plan(None)
    found = fewest(lambda m: powers.setdefault(m, drawn.power(m)) >= POWER, start, limit)
    if found is None:
        return Plan(None, runs=method.plan_runs, searched=limit)
    power = powers[found]
    return Plan(found, power, math.sqrt(power * (1 - power) / method.plan_runs), method.plan_runs, limit)
