"""LI-3's check as an example of every claim's: the verdict follows the numbers, three-valued, with the
Student-t interval over seeds."""

import json

import pytest

from scipy import stats

from vitheory.core.artifacts import write_json, write_table
from vitheory.core.claims import (FAILS, HOLDS, INCONCLUSIVE, MEAN, MEDIAN, PAIRED, SHARE, Criterion, IntervalSettings,
                                  claim_verdict, evaluate)
from vitheory.core.errors import ArtifactError
from vitheory.core.paths import artifact
from vitheory.li23 import token_keeping
from vitheory.li23.claims import PAPER

LI3 = next(claim for claim in PAPER.claims if claim.id == "LI-3")
LI5 = next(claim for claim in PAPER.claims if claim.id == "LI-5")
SETTINGS = IntervalSettings(confidence=0.95, resamples=200, seed=0)


def write_metrics(root, initial, finals):
    path = root / artifact("li_vit_metrics")
    path.parent.mkdir(parents=True, exist_ok=True)
    test = {"attn_all_query": 0.5, "error_rate": 0.0, "loss": 0.0}
    path.write_text(json.dumps({
        "runs": [{"seed": seed, "initial": {"test": test | {"attn_relevant_query": initial}},
                  "final": {"test": test | {"attn_relevant_query": final}}} for seed, final in enumerate(finals)],
        "reference": {"uniform": 0.2, "all_query_cap": 0.9},
    }))


@pytest.mark.parametrize("initial,finals,verdict", [
    (0.22, [0.95, 0.96, 0.94], HOLDS),
    (0.22, [0.80, 0.82, 0.81], FAILS),        # not concentrated enough on any seed
    (0.22, [0.95, 0.80, 0.96], INCONCLUSIVE),  # the seeds straddle 0.9
    (0.32, [0.95, 0.95, 0.95], FAILS),        # less than 3x its initial value
    (0.31, [0.95, 0.95, 0.95], FAILS),        # started far from uniform (0.31 / 0.2 > 1.5)
    (0.30, [0.90, 0.90, 0.90], HOLDS),        # exactly on every threshold
])
def test_li3_verdict_follows_the_numbers(tmp_path, initial, finals, verdict):
    write_metrics(tmp_path, initial, finals)
    record = evaluate(LI3, "LI23", tmp_path, SETTINGS)
    assert record["verdict"] == verdict
    assert record["measured"]["final"] == pytest.approx(sum(finals) / len(finals))
    assert record["units"] == {"seeds": 3, "settings": 1}
    final = record["criteria"]["final >= 0.9"]
    # a mean over seeds takes Student-t's interval, with n - 1 degrees of freedom, inside [0, 1]
    assert final["kind"] == "mean" and final["method"] == "Student-t"
    if len(set(finals)) > 1:
        t_interval = list(stats.t.interval(0.95, 2, loc=sum(finals) / 3, scale=stats.sem(finals)))
        assert final["interval"] == pytest.approx([t_interval[0], min(t_interval[1], 1.0)])
        assert final["units"] == {"seeds": 3} and final["df"] == pytest.approx(2)
    else:
        assert final["interval"] == pytest.approx([finals[0]] * 2) and final["df"] is None
    assert final["margin"] == pytest.approx(record["measured"]["final"] - 0.9)
    assert list(record["criteria"]) == ["final >= 0.9", "final_over_initial >= 3", "initial_over_uniform <= 1.5"]


def test_the_interval_is_reproducible_and_one_seed_gives_no_width(tmp_path):
    write_metrics(tmp_path, 0.22, [0.95, 0.80, 0.96])
    assert evaluate(LI3, "LI23", tmp_path, SETTINGS) == evaluate(LI3, "LI23", tmp_path, SETTINGS)
    write_metrics(tmp_path, 0.22, [0.95])
    assert evaluate(LI3, "LI23", tmp_path, SETTINGS)["criteria"]["final >= 0.9"]["interval"] == [0.95, 0.95]


def test_missing_metrics_name_the_stage(tmp_path):
    with pytest.raises(ArtifactError, match=r"li_vit\.json: missing; run `dvc repro train_li_vit`"):
        evaluate(LI3, "LI23", tmp_path, SETTINGS)


def _ours(quantity, op, threshold):
    return Criterion(quantity, op, threshold, "ours: a test", MEAN)


def test_a_criterion_names_its_threshold_source():
    assert _ours("x", ">", 0.0).source == "ours: a test"
    assert Criterion("x", ">", 0.0, "paper: [LI23] Fig. 2", MEAN).source == "paper: [LI23] Fig. 2"
    for bad in ("", "ours:", "Theorem 1", "ours:  "):
        with pytest.raises(ValueError, match="its source must say"):
            Criterion("x", ">", 0.0, bad, MEAN)


def test_a_criterion_declares_a_kind_and_the_units_it_needs():
    with pytest.raises(ValueError, match="kind 'average' is none of"):
        Criterion("x", ">", 0.0, "ours: a test", "average")
    for kind in (SHARE, MEDIAN, PAIRED):
        with pytest.raises(ValueError, match="names the group"):
            Criterion("x", ">", 0.0, "ours: a test", kind)
    with pytest.raises(ValueError, match="takes no group"):
        Criterion("x", ">", 0.0, "ours: a test", MEAN, group="seeds")
    with pytest.raises(ValueError, match="smallest effect is positive and names its source"):
        Criterion("x", ">", 0.0, "ours: a test", MEAN, smallest_effect=0.01)


def test_criterion_operators_margins_and_verdicts():
    assert _ours("x", ">=", 1.0).holds(1.0)
    assert not _ours("x", ">", 1.0).holds(1.0)
    assert not _ours("x", "<=", 1.0).holds(1.5)
    assert not _ours("x", "<=", 1.0).holds(None)  # not measured: never holds
    assert str(_ours("x", "<=", 1.5)) == "x <= 1.5"
    assert _ours("x", "<=", 1.0).margin(0.25) == 0.75 and _ours("x", ">", 1.0).margin(0.25) == -0.75
    above = _ours("x", ">", 0.0)
    assert above.verdict(0.5, (0.1, 0.9)) == HOLDS
    assert above.verdict(0.5, (-0.1, 0.9)) == INCONCLUSIVE  # the interval straddles the threshold
    assert above.verdict(-0.5, (-0.9, -0.1)) == FAILS
    assert above.verdict(None, (None, None)) == INCONCLUSIVE  # could not be measured
    assert above.verdict(0.02, (1e-16, 0.04)) == INCONCLUSIVE  # an interval that touches 0 by rounding
    small = Criterion("x", ">", 0.0, "ours: a test", MEAN, smallest_effect=0.05, smallest_effect_source="ours: a test")
    assert small.verdict(0.01, (-0.02, 0.04)) == FAILS  # wholly within the smallest effect of interest
    assert small.verdict(0.01, (-0.02, 0.06)) == INCONCLUSIVE
    assert claim_verdict([HOLDS, HOLDS]) == HOLDS
    assert claim_verdict([HOLDS, INCONCLUSIVE]) == INCONCLUSIVE
    assert claim_verdict([INCONCLUSIVE, FAILS]) == FAILS


def _li5_seed(kept, clean=0.8, with_marker=0.5, marker_removed=0.7, attention_removed=0.6, patches=16):
    """One seed's accuracies: `kept` maps a kept-token count to (attention, random, lowest), fine-tuned
    and at inference alike; all tokens score 0.9."""
    natural = {("natural", "all", patches, 0): 0.9}
    natural |= {("natural", strategy, k, f): accuracy for k, accuracies in kept.items() for f in (0, 1)
                for strategy, accuracy in zip(("attention", "random", "lowest"), accuracies)}
    return natural | {("spurious_clean", "all", patches, 0): clean,
                      ("spurious_decorrelated", "all", patches, 0): with_marker,
                      ("spurious_decorrelated", "oracle", patches - 1, 0): marker_removed,
                      ("spurious_decorrelated", "attention", patches - 1, 0): attention_removed}


def test_li5_says_what_the_marker_costs_and_what_removing_it_gains():
    settings = [{"patches": 16}]
    learned = LI5.statistics({"seeds": [_li5_seed({8: (0.9, 0.5, 0.3)})] * 2, "settings": settings})
    assert learned["spurious_marker_cost"] == pytest.approx(0.8 - 0.5)
    assert learned["spurious_oracle_removal_gain"] == pytest.approx(0.7 - 0.5)
    assert learned["spurious_attention_removal_gain"] == pytest.approx(0.6 - 0.5)
    ignored = LI5.statistics({"seeds": [_li5_seed({8: (0.9, 0.5, 0.3)}, 0.8, 0.8, 0.8, 0.8)] * 2,
                              "settings": settings})
    assert ignored["spurious_marker_cost"] == 0 == ignored["spurious_oracle_removal_gain"]


@pytest.mark.parametrize("kept,best,holds", [
    ({12: (0.91, 0.80, 0.70), 8: (0.85, 0.60, 0.40), 4: (0.60, 0.40, 0.20)}, 12, True),   # 12 of 16: no loss
    ({12: (0.85, 0.80, 0.70), 8: (0.80, 0.60, 0.40), 4: (0.60, 0.40, 0.20)}, 12, False),  # a loss at every k
    ({12: (0.91, 0.95, 0.70), 8: (0.85, 0.60, 0.40), 4: (0.60, 0.40, 0.20)}, 12, False),  # random does better
])
def test_li5_reads_the_keep_ratio_where_attention_does_best(kept, best, holds):
    measured = LI5.statistics({"seeds": [_li5_seed(kept)] * 3, "settings": [{"patches": 16}]})
    assert measured["best_kept_tokens"] == best
    assert all(c.holds(measured[c.quantity]) for c in LI5.criteria) is holds


def test_li5_reads_its_accuracies_from_the_runs_and_only_the_token_counts_from_the_metrics(tmp_path):
    seeds = [_li5_seed({12: (0.91, 0.80, 0.70), 8: (0.85 + seed / 100, 0.60, 0.40)}) for seed in range(3)]
    write_table(tmp_path / artifact("sparsify_real_runs"), token_keeping.COLUMNS,
                [(experiment, strategy, kept, seed, finetuned, accuracy) for seed, accuracies in enumerate(seeds)
                 for (experiment, strategy, kept, finetuned), accuracy in accuracies.items()])
    write_json(tmp_path / artifact("sparsify_real_metrics"), {"device": "cpu", "patches": 16, "half": 8})
    measured = evaluate(LI5, "LI23", tmp_path, SETTINGS)["measured"]
    assert measured["full_accuracy"] == pytest.approx(0.9) and measured["patch_tokens"] == 16
    assert measured["finetuned_attention_8"] == pytest.approx(0.86)


LI1 = next(claim for claim in PAPER.claims if claim.id == "LI-1")
LI2 = next(claim for claim in PAPER.claims if claim.id == "LI-2")


def _phase_units(vit_n_min, cnn_n_min, vit_steps, seeds=4, grid=(2, 4, 8, 16, 32, 64)):
    """Per model, each seed's runs: success exactly from the given N on; steps to zero test error by alpha*."""
    def runs(model, n_mins, steps):
        return [[{"model": model, "alpha_star": a, "n_train": n, "seed": s, "test_error": 0.0 if n >= m else 0.1,
                  "steps_to_zero_train_error": steps[a] // 2, "steps_to_zero_test_error": steps[a],
                  "success": int(n >= m)} for a, m in n_mins.items() for n in grid] for s in range(seeds)]
    return {"vit": runs("vit", vit_n_min, vit_steps), "cnn": runs("cnn", cnn_n_min, vit_steps),
            "settings": [{"success_rate": 0.5, "step_budget": 1000}]}


@pytest.mark.parametrize("vit_n_min,cnn_n_min,verdict", [
    ({0.1: 64, 0.2: 16, 0.4: 4}, {0.1: 1000, 0.2: 64, 0.4: 16}, HOLDS),   # falls; the CNN never gets there
    ({0.1: 16, 0.2: 16, 0.4: 16}, {0.1: 1000, 0.2: 64, 0.4: 16}, FAILS),  # flat: alpha* does not matter
    ({0.1: 64, 0.2: 16, 0.4: 4}, {0.1: 32, 0.2: 8, 0.4: 4}, FAILS),       # the CNN needs fewer
])
def test_li1_decides_on_the_directions_and_describes_the_exponent(vit_n_min, cnn_n_min, verdict):
    samples = _phase_units(vit_n_min, cnn_n_min, {0.1: 400, 0.2: 200, 0.4: 100})
    measured = LI1.statistics(samples)
    assert all(c.holds(measured[c.quantity]) for c in LI1.criteria) == (verdict == HOLDS)
    assert {c.quantity for c in LI1.criteria} == {"vit_n_min_falls_as_alpha_grows",
                                                  "cnn_needs_more_samples_at_smallest_alpha"}
    if verdict == HOLDS:
        assert measured["vit_exponent"] == pytest.approx(2.0)  # reported beside Theorem 1's 2, not tested


@pytest.mark.parametrize("steps,holds", [({0.1: 400, 0.2: 200, 0.4: 100}, True),
                                         ({0.1: 100, 0.2: 200, 0.4: 400}, False)])
def test_li2_decides_on_the_direction_of_the_steps(steps, holds):
    measured = LI2.statistics(_phase_units({0.1: 8, 0.2: 8, 0.4: 8}, {0.1: 8, 0.2: 8, 0.4: 8}, steps))
    assert LI2.criteria[0].holds(measured["vit_steps_fall_as_alpha_grows"]) is holds
    assert measured["vit_steps_exponent"] == pytest.approx(1.0 if holds else -1.0, abs=0.01)
