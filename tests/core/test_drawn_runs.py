"""Each method's drawn runs (`METHODS[kind].runs`, what a seed plan decides) are the method itself on each run:
run by run, the value, the interval's ends and a paired test's p-values equal what `interval` makes on that
run's units, and `decide` gives the same verdict. Planted units of every kind, a threshold near their
centre (so that runs decide both ways and stay inconclusive), and a non-finite or unmeasured unit that
cannot be drawn."""

import math

import numpy as np
import pytest

from vitheory.core.claims import Criterion, decide
from vitheory.core.intervals import (COUNTED, LOG, MEAN, MEDIAN, METHODS, PAIRED, PLAN_SIGN_FLIPS, SHARE,
                                     IntervalSettings, Measurement)

SETTINGS = IntervalSettings(confidence=0.95, bootstrap=200, seed=0)
RNG = np.random.default_rng(3)
UNITS = {"a": list(RNG.normal(0.3, 1.0, 9)), "b": list(RNG.normal(-0.2, 2.0, 9))}
POSITIVE = {"a": list(RNG.lognormal(0.1, 0.8, 9))}
SHARES = {"a": [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0]}
CENSORED = {"a": [0.2, math.inf, 0.5, 0.1, math.inf, 0.3, 0.9, 0.4, 0.6]}


def _mean(group):
    return lambda samples: {"q": float(np.mean(samples[group]))}


CASES = {
    "mean": (Criterion("q", ">", 0.2, "ours: a test", MEAN), _mean("a"), UNITS, ["a"]),
    "difference": (Criterion("q", ">", 0.4, "ours: a test", MEAN),
                   lambda s: {"q": float(np.mean(s["a"]) - np.mean(s["b"]))}, UNITS, ["a", "b"]),
    "log": (Criterion("q", ">", 1.2, "ours: a test", LOG), lambda s: {"q": float(np.exp(np.mean(np.log(s["a"]))))},
            POSITIVE, ["a"]),
    "share": (Criterion("q", ">=", 0.6, "ours: a test", SHARE, group="a", bounds=(0.0, 1.0)), _mean("a"), SHARES,
              ["a"]),
    "median": (Criterion("q", "<=", 0.4, "ours: a test", MEDIAN, group="a"),
               lambda s: {"q": float(np.median(s["a"]))}, CENSORED, ["a"]),
    "paired": (Criterion("q", ">", 0.1, "ours: a test", PAIRED, group="a"), _mean("a"), UNITS, ["a"]),
}


@pytest.mark.parametrize("m", (2, 7, 30))  # 2: the fewest a mean can be planned at, Student-t at 1 degree of freedom
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_drawn_run_is_the_methods_own_interval_on_that_run(case, m):
    c, statistics, samples, groups = CASES[case]
    measurement = Measurement(statistics, samples, statistics(samples), SETTINGS, case)
    draws = {group: np.random.default_rng(1).integers(0, len(samples[group]), (25, m)) for group in groups}
    values, found = METHODS[c.kind].runs(c, measurement, draws, np.random.default_rng(0))
    verdicts = set()
    for r, (value, interval) in enumerate(zip(values, found)):
        run = {**samples, **{group: [samples[group][i] for i in draws[group][r]] for group in groups}}
        reference = METHODS[c.kind].interval(c, Measurement(statistics, run, statistics(run), SETTINGS, case))
        assert value == pytest.approx(statistics(run)["q"], rel=1e-9, abs=1e-12), r
        assert interval.ends == pytest.approx(reference.ends, rel=1e-9, abs=1e-12), r
        verdict = decide(c, value, interval, SETTINGS)
        if reference.p_values is not None and not reference.exact:
            # over EXACT_SIGN_FLIP_UNITS seeds the plan draws PLAN_SIGN_FLIPS patterns, the verdict more: the
            # same p-values within the plan's Monte Carlo error, the same verdict away from the tail
            error = [4 * math.sqrt(p * (1 - p) / PLAN_SIGN_FLIPS) + 1 / PLAN_SIGN_FLIPS for p in reference.p_values]
            assert all(abs(a - b) <= e for a, b, e in zip(interval.p_values, reference.p_values, error)), r
            if any(abs(p - SETTINGS.tail) <= e for p, e in zip(reference.p_values, error)):
                continue
        else:
            assert interval.p_values == (None if reference.p_values is None else pytest.approx(reference.p_values)), r
        assert verdict == decide(c, statistics(run)["q"], reference, SETTINGS), r
        verdicts.add(verdict)
    if m == 30:  # enough seeds that the runs decide more than one way: the comparison can tell methods apart
        assert len(verdicts) >= 2, verdicts


@pytest.mark.parametrize("case,units", [("mean", {"a": [0.1, None, 0.3]}), ("log", {"a": [1.0, 0.0, 2.0]}),
                                         ("paired", {"a": [0.1, math.inf, 0.3]}), ("share", {"a": [1.0, None, 0.0]})])
def test_units_that_cannot_be_drawn_give_no_runs(case, units):
    """An unmeasured unit (None), a log's zero, a paired or share unit that is not finite: nothing to plan."""
    c, _, _, groups = CASES[case]

    def statistics(samples):
        values = samples["a"]
        if None in values:
            return {"q": None}
        return {"q": float(np.exp(np.mean(np.log(values)))) if case == "log" and all(v > 0 for v in values)
                else float(np.mean(values)) if case != "log" else None}

    measurement = Measurement(statistics, units, statistics(units), SETTINGS, case)
    draws = {group: np.zeros((4, 3), dtype=int) for group in groups}
    assert METHODS[c.kind].runs(c, measurement, draws, np.random.default_rng(0)) is None


def test_a_counted_quantity_is_its_own_interval_and_has_no_runs():
    c = Criterion("q", "<=", 0.0, "paper: every case counted", COUNTED, bounds=(0.0, 1.0))
    for value, verdict in ((0.0, "holds"), (2 / 64, "does not hold")):
        measurement = Measurement(lambda s: {"q": value}, {"settings": [{}]}, {"q": value}, SETTINGS, "counted")
        interval = METHODS[COUNTED].interval(c, measurement)
        assert (interval.ends, interval.coverage, interval.units) == ((value, value), 1.0, {})
        assert decide(c, value, interval, SETTINGS) == verdict
        assert METHODS[COUNTED].runs(c, measurement, {}, np.random.default_rng(0)) is None
    unmeasured = Measurement(lambda s: {"q": None}, {"settings": [{}]}, {"q": None}, SETTINGS, "counted")
    assert (METHODS[COUNTED].interval(c, unmeasured).ends, METHODS[COUNTED].interval(c, unmeasured).coverage) == \
        ((None, None), None)
