"""Each kind of quantity's interval covers at its nominal level at the unit counts the default run uses,
one side at a time: synthetic units with a known truth, many trials (every 0/1 pattern, weighted by its
probability, for a share: exact coverage), the share of intervals that miss below and above it; and the
rate at which a criterion whose truth sits exactly on its threshold falsely holds. The same harness
pointed at the methods the project used before (a Student-t interval of a share of seeds, the log of an
arithmetic mean of skewed units, a three-unit percentile bootstrap) must find them short. Where a method
falls short and stays (a mean of right-skewed units, a paired test of skewed differences), its own check
on the units (`Method.check`) must flag such runs and state the shortfall the harness measures."""

import itertools
import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from vitheory.core.claims import FAILS, HOLDS, INCONCLUSIVE, SYNTHETIC, Claim, Criterion, decide, intervals
from vitheory.core.intervals import (ASSUMPTION_REPLICATES, LOG, MEAN, MEDIAN, METHODS, PAIRED, ROBUST_FACTOR, SHARE,
                                     SIGN_FLIP_DRAWS, SKEWNESS_EVIDENCE, STEP, Interval, IntervalSettings, Measurement,
                                     clopper_pearson, order_statistic_ranks, sign_flip_p_values, skewed_mean_coverage,
                                     skewed_sign_flip_false_holds)

TRIALS = 2000
# a check must flag strongly skewed runs several times as often as it may flag normal ones
FLAGGED_WHEN_SKEWED = 3 * (1 - SKEWNESS_EVIDENCE)
SETTINGS = IntervalSettings(confidence=0.95, bootstrap=200, seed=0)
TAIL = 0.025
# three standard errors of a 2.5% miss rate over TRIALS trials: what Monte Carlo leaves free
SLACK = 3 * math.sqrt(TAIL * (1 - TAIL) / TRIALS)
# seeds per model in the default run: 5 and 6 (real images, LI-3, AlterNet), 8 and 16 (LI-1's grids),
# 10 (JSL-3's control), 20 (LI-4, the spatial ViTs)
UNIT_COUNTS = (5, 8, 20)


def _claim(statistics, kind, threshold=0.0, op=">", **declared) -> Claim:
    return Claim(id="T", statement="", metric="", evidence=(), samples=lambda root: {}, statistics=statistics,
                 regime=lambda params: "", data=SYNTHETIC,
                 criteria=(Criterion("effect", op, threshold, "ours: a test", kind, **declared),))


def _mean(samples):
    return {"effect": float(np.mean(samples["a"]))}


MEAN_CLAIM = _claim(_mean, MEAN)
DIFFERENCE = _claim(lambda samples: {"effect": float(np.mean(samples["a"]) - np.mean(samples["b"]))}, MEAN)
GEOMETRIC = _claim(lambda samples: {"effect": float(np.exp(np.mean(np.log(samples["a"]))))}, LOG)
MEDIAN_CLAIM = _claim(lambda samples: {"effect": float(np.median(samples["a"]))}, MEDIAN, group="a")
PAIRED_CLAIM = _claim(_mean, PAIRED, group="a")


def _runs(claim, draw, truth, counts, seed=0, trials=TRIALS) -> dict[str, float]:
    """Over `trials` runs: the shares of intervals wholly below and wholly above the truth, of verdicts that
    hold and that do not hold, and of runs whose units the method's own check flags (`Method.check`)."""
    rng = np.random.default_rng(seed)
    criterion = claim.criteria[0]
    counted = dict.fromkeys(("below", "above", HOLDS, FAILS, "flagged"), 0)
    for _ in range(trials):
        samples = {group: list(draw(rng, n)) for group, n in counts.items()}
        measurement = Measurement(claim.statistics, samples, claim.statistics(samples), SETTINGS, claim.id)
        found = METHODS[criterion.kind].interval(criterion, measurement)
        counted["below"] += found.high < truth
        counted["above"] += found.low > truth
        verdict = decide(criterion, measurement.measured["effect"], found, SETTINGS)
        counted[verdict] = counted.get(verdict, 0) + 1
        counted["flagged"] += METHODS[criterion.kind].check(criterion, measurement) is not None
    return {key: value / trials for key, value in counted.items()}


def _misses(claim, draw, truth, counts, seed=0, trials=TRIALS) -> tuple[float, float]:
    """The shares of `trials` intervals that lie wholly below and wholly above the truth."""
    found = _runs(claim, draw, truth, counts, seed, trials)
    return found["below"], found["above"]


# symmetric units, light- and heavy-tailed; mean 1
SYMMETRIC = {
    "normal": lambda rng, n: rng.normal(1.0, 1.0, n),
    "laplace": lambda rng, n: rng.laplace(1.0, 1.0, n),
}


@pytest.mark.parametrize("units", UNIT_COUNTS)
@pytest.mark.parametrize("shape", sorted(SYMMETRIC))
def test_a_mean_misses_on_each_side_at_most_its_tail(shape, units):
    below, above = _misses(MEAN_CLAIM, SYMMETRIC[shape], 1.0, {"a": units})
    assert below <= TAIL + SLACK and above <= TAIL + SLACK


@pytest.mark.parametrize("units", UNIT_COUNTS)
def test_a_mean_of_skewed_units_misses_on_its_long_side_up_to_twice_its_tail(units):
    """The Student-t kind is for roughly symmetric units: units skewed like a gamma of shape 4 (skewness
    1) make it miss from below about 4% of the time at 5 to 20 seeds (measured here), within twice the
    tail; a more skewed quantity takes the log scale or its median (the kinds below)."""
    below, above = _misses(MEAN_CLAIM, lambda rng, n: rng.gamma(4.0, 0.5, n) - 1.0, 1.0, {"a": units})
    assert below <= 2 * TAIL + SLACK and above <= TAIL + SLACK


@pytest.mark.parametrize("units", UNIT_COUNTS)
def test_a_difference_of_two_groups_misses_on_each_side_at_most_its_tail(units):
    def draw(rng, n):
        return rng.normal(1.0, 1.0, n)
    shifted = _claim(lambda s: {"effect": float(np.mean(s["a"]) - np.mean(s["b"]) + 1.0)}, MEAN)
    below, above = _misses(shifted, draw, 1.0, {"a": units, "b": units})
    assert below <= TAIL + SLACK and above <= TAIL + SLACK


@pytest.mark.parametrize("units", UNIT_COUNTS)
def test_a_positive_skewed_quantity_on_the_log_scale_misses_at_most_its_tail(units):
    """Lognormal units (sigma 1, skewness 6.2): their geometric mean, 1, on the log scale."""
    below, above = _misses(GEOMETRIC, lambda rng, n: rng.lognormal(0.0, 1.0, n), 1.0, {"a": units})
    assert below <= TAIL + SLACK and above <= TAIL + SLACK


def test_the_harness_finds_the_log_of_an_arithmetic_mean_of_skewed_units_short():
    """What the log scale does not fix: the mean of lognormal units, e^(1/2), missed from below."""
    arithmetic = _claim(_mean, LOG)
    below, _ = _misses(arithmetic, lambda rng, n: rng.lognormal(0.0, 1.0, n), math.exp(0.5), {"a": 5})
    assert below > TAIL + SLACK


@pytest.mark.parametrize("units", (5, 6, 10, 20))
def test_a_median_of_skewed_units_misses_as_its_order_statistics_say(units):
    """Exponential units (skewness 2), true median ln 2: the interval is distribution-free, each side
    missing (1 - its stated coverage) / 2; at 5 units that is 3.125%, the least any shape-free interval can."""
    _, coverage = order_statistic_ranks(units, 0.95)
    below, above = _misses(MEDIAN_CLAIM, lambda rng, n: rng.exponential(1.0, n), math.log(2), {"a": units})
    assert below <= (1 - coverage) / 2 + SLACK and above <= (1 - coverage) / 2 + SLACK
    assert coverage >= 0.95 or units < 6


# right-skewed units (issue 53, item 10): the truth, and the skewness a gamma stand-in takes (None: not a gamma)
SKEWED = {
    "exponential": (lambda rng, n: rng.exponential(1.0, n), 1.0, 2.0),
    "lognormal": (lambda rng, n: rng.lognormal(0.0, 1.0, n), math.exp(0.5), None),
}
# how far a simulated coverage may sit from another: three standard errors of both simulations
def _agree(a: float, b: float, trials: int = TRIALS) -> bool:
    return abs(a - b) <= 3 * math.sqrt(a * (1 - a) / trials + b * (1 - b) / ASSUMPTION_REPLICATES) + 0.005


@pytest.mark.parametrize("units", (6, 10, 20))
@pytest.mark.parametrize("shape", sorted(SKEWED))
def test_a_mean_of_strongly_skewed_units_falls_short_on_its_long_side_and_its_check_says_so(shape, units):
    """Student-t's interval of a mean of exponential units covers about 88-92% at 6 to 20 seeds, lognormal ones
    less, nearly every miss from below: short of 95% by more than Monte Carlo leaves. The method's check flags
    such runs several times as often as it flags normal units (at 6 to 10 seeds a sample's skewness is often
    within normal units' own, and there it says nothing), and for exponential units the coverage it states at
    skewness 2 is the one measured here."""
    draw, truth, skewness = SKEWED[shape]
    found = _runs(MEAN_CLAIM, draw, truth, {"a": units})
    coverage = 1 - found["below"] - found["above"]
    assert coverage < 0.95 - 3 * math.sqrt(0.95 * 0.05 / TRIALS) and found["below"] > 4 * found["above"]
    assert found["flagged"] >= FLAGGED_WHEN_SKEWED
    if skewness is not None:
        assert _agree(coverage, skewed_mean_coverage(skewness, units, 0.95))


@pytest.mark.parametrize("units", (6, 10, 20))
def test_the_log_of_an_arithmetic_mean_of_skewed_units_falls_short_and_its_check_says_so(units):
    """The log kind on a mean of lognormal units (not their geometric mean): short at every count, and
    flagged by its check on the log scale several times as often as normal units are."""
    found = _runs(_claim(_mean, LOG), SKEWED["lognormal"][0], math.exp(0.5), {"a": units})
    assert 1 - found["below"] - found["above"] < 0.95 - 3 * math.sqrt(0.95 * 0.05 / TRIALS)
    assert found["flagged"] >= FLAGGED_WHEN_SKEWED


@pytest.mark.parametrize("units,trials", [(6, TRIALS), (10, TRIALS), (20, 400)])
def test_a_paired_test_of_skewed_differences_with_mean_zero_decides_falsely_as_its_check_says(units, trials):
    """Per-seed differences exponential minus 1: mean exactly on the threshold 0, but not symmetric about it,
    which the sign-flip null assumes. It decides (one way) far more often than its 2.5% tail; its check flags
    such runs several times as often as normal ones and states that rate at skewness 2. (Over 16 seeds each
    test draws 65,536 patterns: fewer runs.)"""
    found = _runs(PAIRED_CLAIM, lambda rng, n: rng.exponential(1.0, n) - 1.0, 0.0, {"a": units}, trials=trials)
    falsely = max(found[HOLDS], found[FAILS])
    assert falsely > TAIL + 3 * math.sqrt(TAIL * (1 - TAIL) / trials)
    assert _agree(falsely, skewed_sign_flip_false_holds(2.0, units, 0.95), trials)
    assert found["flagged"] >= FLAGGED_WHEN_SKEWED


@pytest.mark.parametrize("units", (6, 10, 20))
def test_a_censored_median_misses_as_its_order_statistics_say(units):
    """Exponential units censored at 1.5 (a seed that never reached its target is infinite; 22% of them),
    true median ln 2 below the censoring: ordered at infinity, not dropped, the interval misses each side
    at most (1 - its stated coverage) / 2."""
    def censored(rng, n):
        values = rng.exponential(1.0, n)
        return np.where(values > 1.5, math.inf, values)
    _, coverage = order_statistic_ranks(units, 0.95)
    below, above = _misses(MEDIAN_CLAIM, censored, math.log(2), {"a": units})
    assert below <= (1 - coverage) / 2 + SLACK and above <= (1 - coverage) / 2 + SLACK


@pytest.mark.parametrize("claim", [MEAN_CLAIM, PAIRED_CLAIM], ids=["mean", "paired"])
@pytest.mark.parametrize("units", (6, 10, 20))
def test_symmetric_units_are_flagged_no_more_often_than_their_skewness_is_evidence(claim, units):
    """Normal units: a check flags a run only where its skewness lies beyond what normal units of that count
    show SKEWNESS_EVIDENCE of the time, so at most the rest of the time, up to Monte Carlo error (a paired
    direction's check flagged normal differences at 10 seeds about half the time when every excess over the
    tail counted: a skewness of 0.7, common by chance, makes its gamma model decide 4% against 2.5%)."""
    trials = 400
    allowed = 1 - SKEWNESS_EVIDENCE
    flagged = _runs(claim, SYMMETRIC["normal"], 1.0 if claim is MEAN_CLAIM else 0.0, {"a": units},
                    trials=trials)["flagged"]
    assert flagged <= allowed + 3 * math.sqrt(allowed * (1 - allowed) / trials)


def test_order_statistic_coverage_is_the_binomial_one():
    assert order_statistic_ranks(5, 0.95) == (1, 1 - 2 / 2 ** 5)
    assert order_statistic_ranks(6, 0.95) == (1, 1 - 2 / 2 ** 6)
    r, coverage = order_statistic_ranks(20, 0.95)
    assert (r, coverage) == (6, pytest.approx(1 - 2 * stats.binom.cdf(5, 20, 0.5)))
    assert 1 - 2 * stats.binom.cdf(6, 20, 0.5) < 0.95 <= coverage  # r = 7 would fall short


def _share_claim(op=">=", threshold=0.5, kind=SHARE):
    declared = {"group": "a"} if kind == SHARE else {}
    return _claim(lambda samples: {"effect": float(np.mean(samples["a"]))}, kind, threshold, op, **declared)


def _exact_share_misses(claim, p, n) -> tuple[float, float]:
    """Every number k of seeds answering yes, weighted by its binomial probability: exact miss rates."""
    below = above = 0.0
    for k in range(n + 1):
        found = intervals(claim, {"a": [1.0] * k + [0.0] * (n - k)}, SETTINGS)["effect"]
        weight = stats.binom.pmf(k, n, p)
        below += weight * (found.high < p)
        above += weight * (found.low > p)
    return below, above


@pytest.mark.parametrize("units", (5, 10, 20))
@pytest.mark.parametrize("p", (0.2, 0.5, 0.8))
def test_a_share_of_seeds_misses_on_each_side_at_most_its_tail_exactly(p, units):
    below, above = _exact_share_misses(_share_claim(), p, units)
    assert below <= TAIL and above <= TAIL


@pytest.mark.parametrize("k", range(6))
def test_a_share_interval_never_leaves_zero_to_one(k):
    found = intervals(_share_claim(), {"a": [1.0] * k + [0.0] * (5 - k)}, SETTINGS)["effect"]
    assert 0.0 <= found.low <= k / 5 <= found.high <= 1.0 and found.low < found.high


def test_the_harness_finds_a_student_t_interval_of_a_share_short():
    """The method before: the jackknife's Student-t on 0/1 units, about 67% coverage at p = 0.2 and 5 seeds."""
    below, above = _exact_share_misses(_share_claim(kind=MEAN), 0.2, 5)
    assert below + above > 0.25


def _false_holds(claim, draw, n, seed=0) -> float:
    """The share of TRIALS verdicts that say HOLDS when the truth sits exactly on the threshold."""
    rng = np.random.default_rng(seed)
    criterion = claim.criteria[0]
    held = 0
    for _ in range(TRIALS):
        samples = {"a": list(draw(rng, n))}
        found = intervals(claim, samples, SETTINGS)["effect"]
        held += decide(criterion, claim.statistics(samples)["effect"], found, SETTINGS) == HOLDS
    return held / TRIALS


@pytest.mark.parametrize("claim,draw", [
    (MEAN_CLAIM, lambda rng, n: rng.normal(0.0, 1.0, n)),
    (PAIRED_CLAIM, lambda rng, n: rng.normal(0.0, 1.0, n)),
    (PAIRED_CLAIM, lambda rng, n: rng.laplace(0.0, 1.0, n)),  # heavy tails: the sign-flip test is still exact
    (_claim(lambda s: {"effect": float(np.exp(np.mean(np.log(s["a"]))))}, LOG, 1.0),
     lambda rng, n: rng.lognormal(0.0, 1.0, n)),
    (_claim(lambda s: {"effect": float(np.median(s["a"]))}, MEDIAN, math.log(2), group="a"),
     lambda rng, n: rng.exponential(1.0, n)),
], ids=["mean", "paired, normal", "paired, laplace", "log", "median"])
@pytest.mark.parametrize("units", (6, 12))
def test_a_criterion_at_its_boundary_falsely_holds_at_most_its_tail(claim, draw, units):
    assert _false_holds(claim, draw, units) <= TAIL + SLACK


def test_a_share_criterion_at_its_boundary_falsely_holds_at_most_its_tail_exactly():
    """'share >= 0.8' with a true share of 0.8: the Student-t interval held it a third of the time."""
    for n in (5, 10, 20):
        claim = _share_claim(threshold=0.8)
        held = sum(stats.binom.pmf(k, n, 0.8) for k in range(n + 1)
                   if decide(claim.criteria[0], k / n, intervals(claim, {"a": [1.0] * k + [0.0] * (n - k)},
                                                                  SETTINGS)["effect"], SETTINGS) == HOLDS)
        assert held <= TAIL


def test_five_seeds_cannot_decide_a_paired_direction_and_six_can():
    """The smallest one-sided p of an exact sign-flip test is 1 / 2^n: 1/32 > 2.5% at 5 seeds, 1/64 at 6."""
    criterion = PAIRED_CLAIM.criteria[0]
    for n, verdict in ((5, INCONCLUSIVE), (6, HOLDS)):
        samples = {"a": [0.5 + 0.1 * i for i in range(n)]}
        found = intervals(PAIRED_CLAIM, samples, SETTINGS)["effect"]
        assert found.p_values == (pytest.approx(1 / 2 ** n), 1.0)
        assert decide(criterion, PAIRED_CLAIM.statistics(samples)["effect"], found, SETTINGS) == verdict
    samples = {"a": [-0.5 - 0.1 * i for i in range(6)]}
    found = intervals(PAIRED_CLAIM, samples, SETTINGS)["effect"]
    assert decide(criterion, PAIRED_CLAIM.statistics(samples)["effect"], found, SETTINGS) == FAILS


def test_a_paired_test_beyond_sixteen_seeds_draws_its_signs_reproducibly():
    samples = {"a": list(np.random.default_rng(3).normal(0.3, 1.0, 24))}
    found = intervals(PAIRED_CLAIM, samples, SETTINGS)["effect"]
    first = found.p_values
    assert first == intervals(PAIRED_CLAIM, samples, SETTINGS)["effect"].p_values
    assert found.exact is False and intervals(PAIRED_CLAIM, {"a": samples["a"][:16]}, SETTINGS)["effect"].exact
    t_p = stats.ttest_1samp(samples["a"], 0.0, alternative="greater").pvalue
    assert first[0] == pytest.approx(t_p, abs=0.02)  # the permutation and t tests agree for normal units


def test_each_kind_takes_its_interval_from_the_table_of_methods(monkeypatch):
    """`intervals` asks METHODS alone: a row replaced is the interval its kind's quantities get; every row
    names its method, what it is for and what it assumes."""
    planted = Interval(-1.0, 1.0, 0.5, {})
    monkeypatch.setitem(METHODS, MEAN, replace(METHODS[MEAN], interval=lambda criterion, measurement: planted))
    assert intervals(MEAN_CLAIM, {"a": [1.0, 2.0]}, SETTINGS)["effect"] is planted
    assert intervals(PAIRED_CLAIM, {"a": [1.0, 2.0]}, SETTINGS)["effect"] is not planted
    assert all(method.name and method.description and method.assumptions for method in METHODS.values())


def test_the_harness_finds_a_three_unit_percentile_bootstrap_short():
    """A percentile bootstrap of the mean over 3 seeds, the method before issue 26: about 73% coverage."""
    claim = _claim(_mean, STEP)
    below, above = _misses(claim, lambda rng, n: rng.normal(1.0, 1.0, n), 1.0, {"a": 3}, trials=500)
    assert below + above > 0.15


def test_an_interval_never_leaves_its_bounds():
    claim = _claim(_mean, MEAN, bounds=(0.0, 1.0))
    found = intervals(claim, {"a": [0.0, 0.0, 0.01, 0.0, 0.03]}, SETTINGS)["effect"]
    assert found.low == 0.0 and 0.0 < found.high < 1.0


def test_a_censored_seed_is_ordered_at_infinity_not_dropped():
    """A seed that never reached its target counts as more than any reached value: the median of
    [1, 2, 3, inf, inf] is 3 and its interval reaches infinity; nothing is unmeasurable."""
    claim = _claim(lambda s: {"effect": float(np.median(s["a"]))}, MEDIAN, 10.0, ">=", group="a")
    found = intervals(claim, {"a": [1.0, 2.0, 3.0, math.inf, math.inf]}, SETTINGS)["effect"]
    assert (found.low, found.high) == (1.0, math.inf)
    censored_majority = {"a": [20.0, math.inf, math.inf, math.inf, 30.0]}
    found = intervals(claim, censored_majority, SETTINGS)["effect"]
    assert decide(claim.criteria[0], claim.statistics(censored_majority)["effect"], found, SETTINGS) == HOLDS


def test_a_step_statistic_with_a_censored_resample_keeps_its_interval():
    claim = _claim(lambda s: {"effect": float(max(s["a"]))}, STEP, 10.0, "<=")
    found = intervals(claim, {"a": [1.0, 2.0, 3.0, 4.0, math.inf]}, SETTINGS)["effect"]
    assert found.low <= 4.0 and found.high == math.inf and found.unmeasured == 0


def test_an_unmeasurable_leave_one_out_gives_a_mean_no_interval():
    claim = _claim(lambda s: {"effect": float(np.mean(s["a"])) if len(s["a"]) > 2 else None}, MEAN)
    assert intervals(claim, {"a": [0.1, 0.2, 0.4]}, SETTINGS)["effect"].low is None


def test_a_step_statistic_most_resamples_cannot_measure_gets_no_interval():
    """Not dropped silently: a value not reached on more resamples than one tail's share leaves no interval."""
    claim = _claim(lambda s: {"effect": 1.0 if 0.0 in s["a"] else None}, STEP)
    found = intervals(claim, {"a": [0.0, 1.0, 2.0, 3.0, 4.0]}, SETTINGS)["effect"]
    assert found.low is None and found.unmeasured > TAIL * SETTINGS.bootstrap


def test_five_units_give_four_degrees_of_freedom_around_the_mean():
    found = intervals(MEAN_CLAIM, {"a": [0.0, 1.0, 2.0, 3.0, 4.0]}, SETTINGS)["effect"]
    assert found.units == {"a": 5} and found.df == pytest.approx(4) and found.coverage == 0.95
    assert (found.low + found.high) / 2 == pytest.approx(2.0)
    assert (found.low, found.high) == pytest.approx(stats.t.interval(0.95, 4, 2.0, stats.sem([0, 1, 2, 3, 4])))


def test_a_setting_and_identical_units_give_no_spread():
    claim = _claim(lambda s: {"effect": float(np.mean(s["a"])) * s["settings"][0]}, MEAN)
    found = intervals(claim, {"a": [0.5, 0.5, 0.5], "settings": [2.0]}, SETTINGS)["effect"]
    assert (found.low, found.high, found.units, found.df) == (1.0, 1.0, {}, None)


@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.8])
@pytest.mark.parametrize("k,n", [(0, 5), (1, 5), (3, 10), (10, 10), (17, 20)])
def test_clopper_pearson_is_scipys_exact_binomial_interval(k, n, confidence):
    """scipy's exact interval (`binomtest(...).proportion_ci(method="exact")`), an implementation of its own."""
    exact = stats.binomtest(k, n).proportion_ci(confidence, method="exact")
    assert clopper_pearson(k, n, confidence) == pytest.approx((exact.low, exact.high), abs=1e-12)


@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.75, 0.5])
def test_the_fewest_seeds_that_can_decide_are_those_of_each_exact_method(confidence):
    """A paired direction: the fewest agreeing seeds whose sign-flip p reaches the tail (the test itself
    asked); a median: the fewest whose [min, max] covers at the confidence (the order statistics' own
    coverage); every other kind: two, the fewest with a spread."""
    tail = (1 - confidence) / 2
    rng = np.random.default_rng(0)
    paired = next(n for n in range(1, 20) if sign_flip_p_values([1.0] * n, 0.0, rng)[0] <= tail)
    median = next(n for n in range(2, 20) if order_statistic_ranks(n, confidence)[1] >= confidence)
    assert METHODS[PAIRED].smallest_units(confidence) == paired
    assert METHODS[MEDIAN].smallest_units(confidence) == median
    assert {METHODS[kind].smallest_units(confidence) for kind in (MEAN, LOG, SHARE, STEP)} == {2}
    # the 95% report: six seeds for a paired direction, six for a median's [min, max] (93.75% at five)
    assert (METHODS[PAIRED].smallest_units(0.95), METHODS[MEDIAN].smallest_units(0.95)) == (6, 6)


@pytest.mark.parametrize("n,positive", [(6, 6), (6, 4), (16, 11), (20, 14)])
def test_sign_flip_p_values_are_the_binomial_tails_for_seeds_of_equal_magnitude(n, positive):
    """Seeds at threshold +- 1: the sum counts the positive signs, so P(T >= observed) is the binomial tail
    P(B(n, 1/2) >= positive), exactly up to 16 seeds and within Monte Carlo error of 2^16 patterns beyond."""
    values = [1.5] * positive + [-0.5] * (n - positive)  # threshold 0.5
    greater, smaller = sign_flip_p_values(values, 0.5, np.random.default_rng(0))
    exact = float(stats.binom.sf(positive - 1, n, 0.5)), float(stats.binom.cdf(positive, n, 0.5))
    slack = 0.0 if n <= 16 else 4 * math.sqrt(0.25 / 2 ** 16)
    assert greater == pytest.approx(exact[0], abs=slack + 1e-12) and smaller == pytest.approx(exact[1], abs=slack + 1e-12)


def test_beyond_sixteen_seeds_the_drawn_signs_estimate_the_exact_p_values():
    """17 seeds of unequal sizes: 2^16 drawn sign patterns against all 2^17, within four Monte Carlo errors."""
    values = np.random.default_rng(3).normal(0.3, 1.0, 17)
    every = np.array(list(itertools.product((1.0, -1.0), repeat=17))) @ values
    exact = float((every >= values.sum() - 1e-9).mean()), float((every <= values.sum() + 1e-9).mean())
    drawn = sign_flip_p_values(list(values), 0.0, np.random.default_rng(0))
    for p, q in zip(drawn, exact):
        assert abs(p - q) <= 4 * math.sqrt(q * (1 - q) / 2 ** 16)


def test_beyond_sixteen_seeds_the_smallest_p_value_is_one_drawn_pattern_in_all():
    """20 seeds all above the threshold: only all-plus patterns reach the observed sum, the one put in among the
    SIGN_FLIP_DRAWS patterns and any drawn (2^-20 each); the p-value counts them; the other side is certain."""
    values = list(np.linspace(1.0, 2.0, 20))
    for seed in range(5):
        greater, smaller = sign_flip_p_values(values, 0.5, np.random.default_rng(seed))
        assert abs(greater * SIGN_FLIP_DRAWS - round(greater * SIGN_FLIP_DRAWS)) < 1e-9
        assert 1 / SIGN_FLIP_DRAWS <= greater <= 3 / SIGN_FLIP_DRAWS and smaller == 1.0


def test_a_paired_directions_check_flags_seeds_skewed_enough_to_decide_falsely_beyond_its_margin():
    """8 per-seed values of skewness 0.36 (0.4 as the check rounds it): a sign-flip test on gamma values of that
    skewness decides falsely about 3.4% against 2.5%, within ROBUST_FACTOR (1.5) times the tail, and a
    skewness that normal values of 8 show by chance: not flagged. One seed far above seven equal ones
    (skewness 2.8) is flagged, with the rate it makes; symmetric values are not flagged."""
    def check(values):
        c = SimpleNamespace(quantity="effect", group="a")
        m = SimpleNamespace(per_unit=lambda quantity, group: values, cfg=IntervalSettings(0.95, 200, 0))
        return METHODS[PAIRED].check(c, m)
    assert check([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.2]) is None
    assert skewed_sign_flip_false_holds(0.4, 8, 0.95) <= ROBUST_FACTOR * TAIL < skewed_sign_flip_false_holds(2.8, 8, 0.95)
    skewed = check([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 10.0])
    assert skewed is not None and "skewness 2.8" in skewed and "at 8 seeds" in skewed
    assert f"falsely decides about {skewed_sign_flip_false_holds(2.8, 8, 0.95):.0%} " in skewed
    assert check([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]) is None


def test_sign_flip_counts_a_pattern_that_ties_the_observed_sum_up_to_rounding_as_a_tie():
    """1000.1 + 2000.2 - 3000.3 is 0 in exact arithmetic, not in floats: flipping those three seeds ties the
    observed sum, and P(T >= observed) counts it, as exact arithmetic does."""
    from fractions import Fraction
    values = [1000.1, 2000.2, -3000.3, 1.0]
    exact = [Fraction(str(v)) for v in values]
    observed = sum(exact)
    patterns = list(itertools.product((1, -1), repeat=len(values)))
    expected = sum(sum(s * v for s, v in zip(p, exact)) >= observed for p in patterns) / len(patterns)
    assert sign_flip_p_values(values, 0.0, np.random.default_rng(0))[0] == pytest.approx(expected)


def _counting(unmeasurable: int):
    """A step statistic (the seeds' minimum) that cannot be measured on the first `unmeasurable` resamples
    (the call before them measures the seeds themselves)."""
    calls = itertools.count()

    def statistics(samples):
        return {"effect": None if 1 <= next(calls) <= unmeasurable else float(min(samples["a"]))}
    return statistics


STEP_UNITS = {"a": [float(v) for v in range(1, 21)]}


@pytest.mark.parametrize("unmeasurable,confidence,placed", [
    (0, 0.95, True), (5, 0.95, True), (6, 0.95, False),  # one tail of 200 resamples: 5
    (25, 0.75, True), (26, 0.75, False),  # a tail of exactly 25 (0.125 x 200 in floats too): 25 is not more
])
def test_a_step_interval_is_placed_with_up_to_one_tails_share_of_unmeasurable_resamples(unmeasurable, confidence,
                                                                                         placed):
    settings = IntervalSettings(confidence=confidence, bootstrap=200, seed=0)
    found = intervals(_claim(_counting(unmeasurable), STEP), STEP_UNITS, settings)["effect"]
    assert (found.low is not None, found.unmeasured) == (placed, unmeasurable)


def test_a_step_interval_is_reproducible_and_its_ends_are_values_resamples_took():
    claim = _claim(lambda s: {"effect": float(np.mean(s["a"]))}, STEP)
    found = intervals(claim, STEP_UNITS, SETTINGS)["effect"]
    assert (found.low, found.high) == intervals(claim, STEP_UNITS, SETTINGS)["effect"].ends
    # a mean of 20 integers is a multiple of 1/20: an interpolated quantile need not be
    assert all(abs(20 * end - round(20 * end)) < 1e-9 for end in found.ends) and found.low < found.high


def test_one_unmeasurable_step_quantity_leaves_the_others_their_intervals():
    claim = Claim(id="T", statement="", metric="", evidence=(), samples=lambda root: {}, regime=lambda params: "",
                  data=SYNTHETIC,
                  statistics=lambda s: {"never": None, "effect": float(np.median(s["a"]))},
                  criteria=tuple(Criterion(q, ">", 0.0, "ours: a test", STEP) for q in ("never", "effect")))
    found = intervals(claim, STEP_UNITS, SETTINGS)
    assert found["never"].low is None and found["effect"].low is not None


def test_a_log_quantitys_interval_is_students_t_on_the_log_scale_and_rests_on_its_seeds():
    """The geometric mean of 1, 2, 4, 8, 16 is 4; its delete-one logs are a mean's, so the interval is
    exp(log 4 -+ t_0.975,4 sem(log units))."""
    units = [1.0, 2.0, 4.0, 8.0, 16.0]
    found = intervals(GEOMETRIC, {"a": units}, SETTINGS)["effect"]
    se = stats.sem(np.log(units))
    low, high = stats.t.interval(0.95, 4, math.log(4.0), se)
    assert (found.low, found.high) == pytest.approx((math.exp(low), math.exp(high)))
    assert (found.coverage, found.units, found.df) == (0.95, {"a": 5}, pytest.approx(4))


def test_an_unmeasurable_leave_one_out_gives_a_log_quantity_no_interval():
    claim = _claim(lambda s: {"effect": float(np.exp(np.mean(np.log(s["a"])))) if len(s["a"]) > 4 else None}, LOG)
    found = intervals(claim, {"a": [1.0, 2.0, 4.0, 8.0, 16.0]}, SETTINGS)["effect"]
    assert (found.low, found.high, found.units) == (None, None, {})


@pytest.mark.parametrize("samples,units", [
    ({"a": [float(v) for v in range(1, 21)], "settings": [1.0]}, {"a": 20}),  # one value is a setting, not units
    ({"a": [1.0, 3.0]}, {"a": 2}),  # two seeds are units
    ({"a": [2.0] * 20}, {}),  # every resample takes the same value: nothing moves it
])
def test_a_step_interval_rests_on_the_groups_whose_units_move_it(samples, units):
    claim = _claim(lambda s: {"effect": float(np.median(s["a"]))}, STEP)
    found = intervals(claim, samples, SETTINGS)["effect"]
    assert found.units == units and found.coverage == 0.95
    assert (found.low < found.high) == bool(units)


@pytest.mark.parametrize("n,confidence", [(n, 0.95) for n in range(5, 31)] + [(6, 0.78125), (9, 0.5), (12, 0.9),
                                                                          (30, 0.5)])
def test_order_statistic_ranks_are_the_innermost_pair_that_covers(n, confidence):
    """The largest r whose [x_(r), x_(n+1-r)] covers the median with probability 1 - 2 P(B(n, 1/2) <= r - 1)
    >= confidence, searched over every r here; r = 1 when none does. 0.78125 is r = 2's coverage at 6
    seeds exactly: a pair that covers at exactly the confidence is taken."""
    covering = [r for r in range(1, n // 2 + 1) if 1 - 2 * stats.binom.cdf(r - 1, n, 0.5) >= confidence - 1e-15]
    r = max(covering, default=1)
    assert order_statistic_ranks(n, confidence) == (r, pytest.approx(1 - 2 * stats.binom.cdf(r - 1, n, 0.5)))


@pytest.mark.parametrize("units,moving", [([3.0] * 8, False), ([1.0] * 7 + [9.0], True), ([0.0] + [5.0] * 7, True)])
def test_a_median_rests_on_its_seeds_unless_they_all_agree(units, moving):
    found = intervals(MEDIAN_CLAIM, {"a": units}, SETTINGS)["effect"]
    assert found.units == ({"a": 8} if moving else {})


def test_an_unmeasurable_seeds_median_has_no_interval():
    claim = _claim(lambda s: {"effect": None if None in s["a"] else float(np.median(s["a"]))}, MEDIAN, group="a")
    found = intervals(claim, {"a": [1.0, 2.0, None, 4.0, 5.0]}, SETTINGS)["effect"]
    assert (found.low, found.high, found.coverage, found.units) == (None, None, None, {})


def test_two_seeds_are_units_not_a_setting():
    found = intervals(MEAN_CLAIM, {"a": [0.2, 0.6]}, SETTINGS)["effect"]
    assert found.units == {"a": 2} and found.df == pytest.approx(1.0) and found.low < 0.4 < found.high


@pytest.mark.parametrize("full,left_out", [(math.inf, 1.0), (1.0, math.inf)])
def test_a_quantity_infinite_on_all_seeds_or_on_a_leave_one_out_gets_no_interval(full, left_out):
    claim = _claim(lambda s: {"effect": full if len(s["a"]) == 8 else left_out}, MEAN)
    assert intervals(claim, {"a": [float(v) for v in range(8)]}, SETTINGS)["effect"].ends == (None, None)


def test_leave_one_out_values_equal_up_to_rounding_do_not_move_the_quantity():
    """A quantity near 1000 whose delete-one values differ by about 1e-11 (1e-14 of it, what rounding leaves
    of equal numbers) has no spread: 1e-12 of its size is the tolerance."""
    claim = _claim(lambda s: {"effect": 1e3 + 1e-11 * float(np.sum(s["a"]))}, MEAN)
    units = [float(v) for v in range(8)]
    left_out = [claim.statistics({"a": units[:i] + units[i + 1:]})["effect"] for i in range(8)]
    assert 0 < np.ptp(left_out) < 1e-9  # the differences this test is about are there
    found = intervals(claim, {"a": units}, SETTINGS)["effect"]
    assert (found.units, found.df, found.low) == ({}, None, found.high)


def test_a_means_check_states_the_coverage_at_the_units_rounded_skewness_and_passes_two_seeds():
    """One seed far above seven equal ones (skewness 2.8, beyond normal units' at 8): the check states the
    simulated coverage at 2.8; two seeds, which have no skewness, are not checked (and do not fail)."""
    def check(values):
        measurement = Measurement(_mean, {"a": values}, _mean({"a": values}), SETTINGS, "skewed")
        return METHODS[MEAN].check(MEAN_CLAIM.criteria[0], measurement)
    stated = check([0.0] * 7 + [10.0])
    assert stated is not None and "skewness 2.8" in stated and "at 8 seeds" in stated
    assert f"coverage about {skewed_mean_coverage(2.8, 8, 0.95):.0%} " in stated
    assert check([0.0, 1.0]) is None
