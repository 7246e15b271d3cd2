"""The claim-level verdict rule on its own, through `evaluate` on a claim built here: conditions before
criteria, a failing criterion before an inconclusive one, variants beside the verdict and never in it; a
paired direction decided by its exact test; "does not hold" from the whole interval, or from a smallest
effect of interest."""

import statistics

import pytest
from verdict_tables import SETTINGS

from vitheory.core.claims import (FAILS, HOLDS, INCONCLUSIVE, MEAN, PAIRED, Claim, Criterion, Variant, claim_verdict,
                                  evaluate)

ON = [1.0] * 8  # a condition's indicator on every seed: met
OFF = [0.0] * 8  # unmet
ABOVE = [0.10, 0.12, 0.11, 0.13, 0.10, 0.12, 0.11, 0.12]  # every seed clearly above 0
BELOW = [-v for v in ABOVE]
ACROSS = [0.10, -0.12, 0.11, -0.13, 0.10, -0.12, 0.11, -0.12]  # both sides of 0, the mean just below it


def _ours(quantity, op, threshold, kind=MEAN, **declared):
    return Criterion(quantity, op, threshold, "ours: a threshold of this test", kind,
                     group="seeds" if kind == PAIRED else None, **declared)


def _seeds(**values):
    """One unit per seed holding each quantity's value on that seed."""
    names = list(values)
    return {"seeds": [dict(zip(names, seed)) for seed in zip(*values.values())]}


def _means(samples):
    return {q: statistics.mean(seed[q] for seed in samples["seeds"]) for q in samples["seeds"][0]}


def _claim(criteria, samples, conditions=(), variants=()):
    return Claim(id="RULE", statement="a claim of this test", metric="means over seeds", criteria=tuple(criteria),
                 evidence=(), samples=lambda root: samples, statistics=_means, regime=lambda params: "",
                 conditions=tuple(conditions), variants=tuple(variants))


def _judge(tmp_path, criteria, samples, conditions=(), variants=()):
    return evaluate(_claim(criteria, samples, conditions, variants), "TEST", tmp_path, SETTINGS)


@pytest.mark.parametrize("criteria,conditions,verdict", [
    ([FAILS], [FAILS], INCONCLUSIVE),          # an unmet condition beats a failing criterion
    ([FAILS], [INCONCLUSIVE], INCONCLUSIVE),   # a condition not shown met is unmet
    ([HOLDS], [FAILS], INCONCLUSIVE),
    ([FAILS, INCONCLUSIVE], [HOLDS], FAILS),   # a failing criterion beats an inconclusive one
    ([HOLDS, INCONCLUSIVE], [HOLDS], INCONCLUSIVE),
    ([HOLDS, HOLDS], [HOLDS], HOLDS),
    ([HOLDS], [], HOLDS),
    ([FAILS, HOLDS], [], FAILS),
])
def test_the_rule_orders_conditions_then_failing_then_inconclusive_criteria(criteria, conditions, verdict):
    assert claim_verdict(criteria, conditions) == verdict


@pytest.mark.parametrize("condition,verdict", [(ON, FAILS), (OFF, INCONCLUSIVE), ([1.0, 0.0] * 4, INCONCLUSIVE)])
def test_an_unmet_condition_beats_a_failing_criterion_through_evaluate(tmp_path, condition, verdict):
    record = _judge(tmp_path, [_ours("effect", ">", 0.0)], _seeds(effect=BELOW, trained=condition),
                    conditions=[_ours("trained", ">=", 1.0)])
    assert record["criteria"]["effect > 0"]["verdict"] == FAILS
    assert record["verdict"] == verdict


@pytest.mark.parametrize("second,second_verdict,verdict", [(BELOW, FAILS, FAILS), (ABOVE, HOLDS, INCONCLUSIVE)])
def test_a_failing_criterion_beats_an_inconclusive_one_through_evaluate(tmp_path, second, second_verdict, verdict):
    record = _judge(tmp_path, [_ours("first", ">", 0.0), _ours("second", ">", 0.0)], _seeds(first=ACROSS, second=second))
    assert record["criteria"]["first > 0"]["verdict"] == INCONCLUSIVE
    assert record["criteria"]["second > 0"]["verdict"] == second_verdict
    assert record["verdict"] == verdict


@pytest.mark.parametrize("main,other", [(ABOVE, BELOW), (BELOW, ABOVE), (ACROSS, ABOVE), (ABOVE, ACROSS)])
def test_a_variants_verdict_never_changes_the_claims(tmp_path, main, other):
    criteria = [_ours("effect", ">", 0.0)]
    alone = _judge(tmp_path, criteria, _seeds(effect=main))["verdict"]
    record = _judge(tmp_path, criteria, _seeds(effect=main),
                    variants=[Variant("another setting", lambda root: _seeds(effect=other))])
    assert record["verdict"] == alone
    assert record["variants"]["another setting"]["verdict"] == _judge(tmp_path, criteria, _seeds(effect=other))["verdict"]
    assert record["variants"]["another setting"]["verdict"] != alone


def test_a_paired_direction_is_decided_by_the_exact_test_not_the_interval(tmp_path):
    # every seed positive, one by far: Student-t's interval crosses 0, the sign-flip test rejects at 1/2^8
    values = [0.01] * 7 + [10.0]
    mean = _judge(tmp_path, [_ours("difference", ">", 0.0)], _seeds(difference=values))["criteria"]["difference > 0"]
    assert mean["verdict"] == INCONCLUSIVE and mean["interval"][0] < 0
    paired = _judge(tmp_path, [_ours("difference", ">", 0.0, PAIRED)], _seeds(difference=values))
    check = paired["criteria"]["difference > 0"]
    assert check["interval"][0] < 0 and check["p_values"] == {"greater": pytest.approx(1 / 256), "smaller": 1.0}
    assert check["verdict"] == HOLDS and paired["verdict"] == HOLDS
    # every seed negative: the test rejects the holding side
    assert _judge(tmp_path, [_ours("difference", ">", 0.0, PAIRED)],
                  _seeds(difference=[-v for v in values]))["verdict"] == FAILS


@pytest.mark.parametrize("seeds,verdict", [(5, INCONCLUSIVE), (6, HOLDS)])
def test_a_paired_direction_needs_six_seeds_to_decide(tmp_path, seeds, verdict):
    # all seeds agree and tightly: Student-t's interval is wholly above 0, but at 5 seeds the smallest
    # one-sided p of the sign-flip test is 1/32 > 2.5%
    values = ABOVE[:seeds]
    assert _judge(tmp_path, [_ours("difference", ">", 0.0)], _seeds(difference=values))["verdict"] == HOLDS
    record = _judge(tmp_path, [_ours("difference", ">", 0.0, PAIRED)], _seeds(difference=values))
    assert record["criteria"]["difference > 0"]["p_values"]["greater"] == pytest.approx(0.5 ** seeds)
    assert record["verdict"] == verdict


@pytest.mark.parametrize("kind", [MEAN, PAIRED])
def test_does_not_hold_needs_the_whole_interval_on_the_other_side(tmp_path, kind):
    record = _judge(tmp_path, [_ours("effect", ">", 0.0, kind)], _seeds(effect=ACROSS))
    check = record["criteria"]["effect > 0"]
    assert record["measured"]["effect"] < 0 and check["interval"][0] < 0 < check["interval"][1]
    assert check["verdict"] == INCONCLUSIVE and record["verdict"] == INCONCLUSIVE


TINY = [0.001, -0.002, 0.0015, -0.001, 0.002, -0.0015, 0.001, -0.0012]  # within 0.005 of 0, both sides


@pytest.mark.parametrize("kind", [MEAN, PAIRED])
@pytest.mark.parametrize("values,smallest,verdict", [
    (TINY, None, INCONCLUSIVE),     # without a smallest effect, an interval across the threshold decides nothing
    (TINY, 0.05, FAILS),            # wholly within 0.05 of 0: the effect, if any, is smaller than that
    (ACROSS, 0.05, INCONCLUSIVE),   # reaching beyond 0.05: it could be an effect of interest
    (ABOVE, 0.5, HOLDS),            # wholly above the threshold: holds, whatever the smallest effect
])
def test_a_smallest_effect_of_interest_decides_does_not_hold(tmp_path, kind, values, smallest, verdict):
    declared = {} if smallest is None else {"smallest_effect": smallest,
                                            "smallest_effect_source": "ours: an effect this test calls negligible"}
    record = _judge(tmp_path, [_ours("effect", ">", 0.0, kind, **declared)], _seeds(effect=values))
    assert record["criteria"]["effect > 0"]["verdict"] == verdict
    assert record["verdict"] == verdict
