"""The claim-level verdict rule on its own, through `evaluate` on a claim built here: conditions before
criteria, a failing criterion before an inconclusive one, variants beside the verdict and never in it; a
paired direction decided by its exact test; "does not hold" from the whole interval, or from a smallest
effect of interest."""

import statistics
from dataclasses import replace

import pytest
from verdict_tables import SETTINGS

from vitheory.core.claims import (AFFORDABLE_SEEDS, FAILS, HOLDS, INCONCLUSIVE, SYNTHETIC, Claim, Criterion,
                                  Variant, claim_verdict, evaluate)
from vitheory.core.intervals import MEAN, PAIRED, SHARE, STEP, IntervalSettings
from vitheory.core.paths import artifact
from vitheory.core.planning import DRAWN

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


def _claim(criteria, samples, conditions=(), variants=(), evidence=()):
    return Claim(id="RULE", statement="a claim of this test", metric="means over seeds", criteria=tuple(criteria),
                 evidence=tuple(evidence), samples=lambda root: samples, statistics=_means, regime=lambda params: "",
                 data=SYNTHETIC, conditions=tuple(conditions), variants=tuple(variants))


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
    assert (check["coverage"], check["units"], check["df"]) == (0.95, {"seeds": 8}, 7.0)  # Student-t's beside it
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
    check = record["criteria"]["effect > 0"]
    assert check["verdict"] == verdict
    assert record["verdict"] == verdict
    # the report says why a "does not hold" rests on the smallest effect, and plans seeds only when inconclusive
    assert check.get("reason") == ("the effect, if any, is smaller than 0.05" if verdict == FAILS else None)
    assert ("seeds_needed" in check) == (verdict == INCONCLUSIVE)


def test_a_record_states_what_the_report_verify_and_the_decisive_preset_read(tmp_path):
    """claims.json's fields by name: the claim's identity, the interval settings, evidence relative to the
    report's folder (where REPORT.md links it), and per check its threshold, source, method, coverage, the
    bootstrap's unmeasured resamples (step statistics only) and a smallest effect with its source."""
    smallest = {"smallest_effect": 0.05, "smallest_effect_source": "ours: an effect this test calls negligible"}
    figure = artifact("report").parent / "figures" / "rule.png"
    record = evaluate(_claim([_ours("effect", ">", 0.0, **smallest), _ours("reached", ">=", 0.5, STEP)],
                             _seeds(effect=ABOVE, reached=ON, trained=ON), conditions=[_ours("trained", ">=", 1.0)],
                             evidence=[figure]), "TEST", tmp_path, SETTINGS)
    assert {key: record[key] for key in ("id", "paper", "statement", "metric", "interval", "evidence")} == {
        "id": "RULE", "paper": "TEST", "statement": "a claim of this test", "metric": "means over seeds",
        "interval": {"confidence": SETTINGS.confidence, "resamples": SETTINGS.bootstrap},
        "evidence": ["figures/rule.png"]}
    effect, reached = record["criteria"]["effect > 0"], record["criteria"]["reached >= 0.5"]
    assert (effect["threshold"], effect["source"], effect["kind"], effect["method"], effect["coverage"]) == (
        "> 0", "ours: a threshold of this test", MEAN, "Student-t", SETTINGS.confidence)
    assert effect["smallest_effect"] == {"value": 0.05, "source": "ours: an effect this test calls negligible"}
    assert "unmeasured_resamples" not in effect and "smallest_effect" not in reached
    assert (reached["kind"], reached["method"], reached["unmeasured_resamples"]) == (STEP, "percentile bootstrap", 0)
    assert record["conditions"]["trained >= 1"]["verdict"] == HOLDS


def test_a_share_is_recorded_with_its_exact_method_and_an_unmeasured_one_with_no_interval(tmp_path):
    share = Criterion("reached", ">=", 0.5, "ours: a threshold of this test", SHARE, group="seeds")

    def judged(value):
        return evaluate(Claim(id="SHARE", statement="", metric="", criteria=(share,), evidence=(),
                              samples=lambda root: _seeds(reached=ON), statistics=lambda samples: {"reached": value},
                              regime=lambda params: "", data=SYNTHETIC),
                        "TEST", tmp_path, SETTINGS)["criteria"]["reached >= 0.5"]

    measured = judged(7 / 8)
    assert (measured["method"], measured["coverage"], measured["units"]) == ("Clopper-Pearson", 0.95, {"seeds": 8})
    unmeasured = judged(None)
    assert (unmeasured["interval"], unmeasured["coverage"], unmeasured["units"]) == ([None, None], None, {})
    assert (unmeasured["verdict"], unmeasured["seeds_needed"]) == (INCONCLUSIVE, None)
    with pytest.raises(ValueError, match=r"reached = 0.55 is not a share of the 8 units of seeds"):
        judged(0.55)


def test_an_inconclusive_check_records_the_seeds_its_test_would_need_and_how_they_were_planned(tmp_path):
    """A mean 0.09 above 0 with spread 0.17 over 8 seeds: some dozens of seeds, resampled; ACROSS's mean, 0.009
    from 0, no count up to AFFORDABLE_SEEDS."""
    moderate = [0.3, -0.1, 0.25, -0.05, 0.2, 0.0, 0.3, -0.15]
    check = _judge(tmp_path, [_ours("effect", ">", 0.0)], _seeds(effect=moderate))["criteria"]["effect > 0"]
    assert check["verdict"] == INCONCLUSIVE and 8 < check["seeds_needed"] < 100
    assert check["plan"]["by"] == DRAWN and check["plan"]["power"] >= 0.7 and check["plan"]["runs"] > 0
    small = _judge(tmp_path, [_ours("effect", ">", 0.0)], _seeds(effect=ACROSS))["criteria"]["effect > 0"]
    assert (small["seeds_needed"], small["plan"]["searched_up_to"]) == (None, AFFORDABLE_SEEDS)


def test_a_paired_direction_with_a_seed_it_cannot_measure_alone_keeps_its_interval_and_runs_no_test(tmp_path):
    """The mean over the seeds it can measure: each leave-one-out mean exists, but one seed alone has none,
    so the sign-flip test has no value for it; Student-t's interval stands and decides, as for a mean."""
    values = ABOVE[:7] + [None]

    def measurable_mean(samples):
        measured = [seed["difference"] for seed in samples["seeds"] if seed["difference"] is not None]
        return {"difference": statistics.mean(measured) if measured else None}

    def judged(kind):
        claim = Claim(id="RULE", statement="", metric="", criteria=(_ours("difference", ">", 0.0, kind),), evidence=(),
                      samples=lambda root: _seeds(difference=values), statistics=measurable_mean,
                      regime=lambda params: "", data=SYNTHETIC)
        return evaluate(claim, "TEST", tmp_path, SETTINGS)["criteria"]["difference > 0"]

    paired, mean = judged(PAIRED), judged(MEAN)
    kept = ("interval", "coverage", "units", "df")
    assert {k: paired[k] for k in kept} == {k: mean[k] for k in kept} and mean["interval"][0] > 0
    assert "p_values" not in paired and paired["verdict"] == mean["verdict"] == HOLDS


@pytest.mark.parametrize("values,verdict", [(ABOVE[:6], HOLDS), (BELOW[:6], FAILS)])
def test_a_sign_flip_p_exactly_at_the_tail_decides(tmp_path, values, verdict):
    """At confidence 1 - 2/64 the tail is 1/64, six agreeing seeds' p exactly: the test rejects at p <= tail."""
    settings = IntervalSettings(confidence=1 - 2 / 64, bootstrap=SETTINGS.bootstrap, seed=0)
    record = evaluate(_claim([_ours("difference", ">", 0.0, PAIRED)], _seeds(difference=values)), "TEST", tmp_path,
                      settings)
    assert record["verdict"] == verdict


def test_a_value_within_rounding_of_the_threshold_counts_as_on_it():
    """1e-9 relative to the threshold (at least 1e-9): 0.1 + 0.2 is not above 0.3, 1000 + 1e-7 not above 1000,
    but 1.5e-9 is above 0 and 1000 + 1e-5 above 1000."""
    def above(value, threshold):
        return _ours("effect", ">", threshold).holds(value)
    assert not above(0.1 + 0.2, 0.3) and not above(1000 + 1e-7, 1000.0)
    assert above(1.5e-9, 0.0) and above(1000 + 1e-5, 1000.0)
    assert _ours("effect", ">=", 0.3).holds(0.3 - 1e-12)


def test_an_interval_reaching_exactly_the_smallest_effect_is_negligible():
    c = _ours("effect", ">", 0.0, smallest_effect=0.05, smallest_effect_source="ours: negligible here")
    assert c.negligible((-0.05, 0.05)) and not c.negligible((-0.05, 0.06)) and not c.negligible((-0.06, 0.05))


def test_a_claim_says_whether_its_data_are_synthetic_or_real():
    claim = _claim([_ours("effect", ">", 0.0)], _seeds(effect=ABOVE))
    with pytest.raises(ValueError, match="RULE: data 'images' is neither 'synthetic' nor 'real'"):
        replace(claim, data="images")


def test_a_quantity_declared_as_two_kinds_is_refused_and_two_quantities_of_two_kinds_are_not():
    _claim([_ours("a", ">", 0.0), _ours("b", ">", 0.0, PAIRED)], _seeds(a=ABOVE, b=ABOVE))
    with pytest.raises(ValueError, match=r"^RULE: a is declared as two kinds of quantity$"):
        _claim([_ours("a", ">", 0.0), _ours("a", ">", 0.0, PAIRED)], _seeds(a=ABOVE))


@pytest.mark.parametrize("declared,message", [
    ({"kind": SHARE}, "a share quantity names the group of units it is taken over"),
    ({"kind": MEAN, "group": "seeds"}, "a mean quantity takes no group"),
    ({"kind": MEAN, "smallest_effect": 0.0, "smallest_effect_source": "ours: none"}, "smallest effect"),
])
def test_a_criterion_declared_wrongly_is_refused_saying_what_is_wrong(declared, message):
    with pytest.raises(ValueError, match=message):
        Criterion("effect", ">", 0.0, "ours: a threshold of this test", **declared)


def test_a_criterion_knows_whose_threshold_it_is_and_claims_json_records_it(tmp_path):
    """`origin` is the source's declared owner, "paper" or "ours", recorded apart in each check."""
    assert Criterion("q", ">", 0.0, "paper: Fig. 1, the sign", MEAN).origin == "paper"
    assert Criterion("q", ">", 0.0, "ours: a margin: ours", MEAN).origin == "ours"
    judged = _judge(tmp_path, [_ours("effect", ">", 0.0)], _seeds(effect=[0.3, 0.2, 0.25, 0.3, 0.35, 0.2, 0.3, 0.25]))
    assert judged["criteria"]["effect > 0"]["origin"] == "ours"
