"""[JSL22] checks read the run's own score form, each ablation form and the variant partition from the
stored per-seed runs, and compute every summary from them."""

import json
import math
import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from verdict_tables import SEEDS, SETTINGS, wiggle

from vitheory.core.artifacts import write_json, write_table
from vitheory.core.claims import FAILS, HOLDS, INCONCLUSIVE, evaluate
from vitheory.core.errors import ArtifactError
from vitheory.core.paths import artifact, run_name, runs
from vitheory.jsl22 import pos_dim
from vitheory.jsl22.claims import PAPER, _spatial_samples
from vitheory.jsl22.training import TRANSFER_COLUMNS
from vitheory.params import parse_params
from vitheory.preset import merge
from vitheory.report import claim_section

CLAIMS = {claim.id: claim for claim in PAPER.claims}


def _runs(error, exact, positional=None):
    """Three seeds alike; `positional` is P P^T's association where it differs from the attention map's."""
    positional = exact if positional is None else positional
    unit = {"error_rate": error, "pos_exact": positional, "pos_overlap": positional, "attn_exact": exact,
            "attn_overlap": exact, "loss": 0.1}
    start = {"pos_exact": 0.0, "pos_overlap": 0.3, "attn_exact": 0.0, "attn_overlap": 0.3}
    return {"initial": [unit | start] * 3, "final": [unit] * 3, "unstable": [False] * 3, "halvings": [0] * 3}


def _plant(root, ablation):
    runs = {"vit": _runs(0.02, 0.95), "glm": [{"error_rate": 0.16}] * 3} | ablation
    variant = {"runs": {"vit": _runs(0.04, 0.7), "glm": [{"error_rate": 0.2}] * 3}, "best_linear_error": 0.13}
    write_json(root / artifact("spatial_metrics"), {
        "runs": runs, "score_form": "ppt", "best_linear_error": 0.14, "chance": {"exact": 0.0, "overlap": 0.28},
        "variant": variant})
    _pos_dim_rows(root, {32: (0.2, 0.3, 0.4), 128: (0.9, 1.0, 0.8)}, 3)  # the width sweep JSL-2 describes


def test_the_runs_own_form_and_the_qk_variant_are_measured_from_their_own_runs(tmp_path):
    _plant(tmp_path, {"qk": _runs(0.30, 0.2)})
    jsl1 = CLAIMS["JSL-1"]
    assert jsl1.measure(tmp_path)["vit_test_error"] == pytest.approx(0.02)
    qk, partition = jsl1.variants
    assert jsl1.statistics(qk.samples(tmp_path))["vit_test_error"] == pytest.approx(0.30)
    # the variant partition: its own ViT, linear model and best linear error
    variant = jsl1.statistics(partition.samples(tmp_path))
    assert (variant["vit_test_error"], variant["glm_test_error"], variant["best_linear_test_error"]) == \
        pytest.approx((0.04, 0.2, 0.13))
    jsl2 = CLAIMS["JSL-2"]
    assert jsl2.measure(tmp_path)["final_exact"] == pytest.approx(0.95)
    assert jsl2.statistics(jsl2.variants[0].samples(tmp_path))["final_exact"] == pytest.approx(0.2)
    assert jsl2.statistics(jsl2.variants[1].samples(tmp_path))["final_exact"] == pytest.approx(0.7)


def test_a_variant_whose_form_was_not_trained_names_the_params_to_add_it(tmp_path):
    _plant(tmp_path, {})
    with pytest.raises(ArtifactError, match="spatial.ablation"):
        CLAIMS["JSL-1"].variants[0].samples(tmp_path)


@pytest.mark.parametrize("exact,positional,holds", [
    (1.0, 1.0, True),     # every patch of every seed: Definition 2.2 holds
    (0.98, 0.98, False),  # one patch in 64 off on every seed: the overlap is near 1, the definition does not hold
    (0.2, 1.0, False),    # P P^T associates, but the attention map the model uses does not (the qk form)
])
def test_jsl2_is_definition_2_2_exactly_on_the_attention_map(tmp_path, exact, positional, holds):
    _plant(tmp_path, {})
    metrics = tmp_path / artifact("spatial_metrics")
    stored = json.loads(metrics.read_text())
    stored["runs"]["vit"] = _runs(0.02, exact, positional)
    write_json(metrics, stored)
    jsl2 = CLAIMS["JSL-2"]
    measured = jsl2.measure(tmp_path)
    assert measured["seeds_meeting_definition"] == (1.0 if holds else 0.0)
    assert measured["final_positional_exact"] == pytest.approx(positional)
    assert all(c.holds(measured[c.quantity]) for c in jsl2.criteria) is holds


def _control_metrics(control_exact, positive_exact):
    # P P^T's association decides (what [JSL22] Fig. 2 shows); the attention map's, set apart, must not
    def seed(exact, error=0.02):
        return {"error_rate": error, "train_error_rate": 0.0, "attn_exact": 0.9 - exact, "attn_overlap": 0.3,
                "pos_exact": exact, "pos_overlap": exact, "unstable": False, "halvings": 0}
    return {"chance": {"exact": 0.002, "overlap": 0.4},
            "runs": {"vit": [seed(control_exact)] * 3, "glm": [{"error_rate": 0.09}] * 3},
            "positive_control": {"chance": {"exact": 0.0, "overlap": 0.28}, "initial": [],
                                 "final": [seed(positive_exact)] * 3}}


@pytest.mark.parametrize("control_exact,positive_exact,verdict", [
    (0.0, 0.9, "holds"),          # no association on the control; the same student shows it where present
    (0.0, 0.0, "inconclusive"),   # the measure reads none even where association is present: says nothing
    (0.5, 0.9, "does not hold"),  # the control's P P^T does show the sets
])
def test_jsl3_needs_its_positive_control(tmp_path, control_exact, positive_exact, verdict):
    from vitheory.core.claims import evaluate
    from vitheory.core.intervals import IntervalSettings

    write_json(tmp_path / artifact("control_metrics"), _control_metrics(control_exact, positive_exact))
    record = evaluate(CLAIMS["JSL-3"], "JSL22", tmp_path, IntervalSettings(confidence=0.95, bootstrap=100, seed=0))
    assert record["verdict"] == verdict


def test_jsl3_without_a_positive_control_names_the_stage(tmp_path):
    metrics = _control_metrics(0.0, 0.9)
    del metrics["positive_control"]
    write_json(tmp_path / artifact("control_metrics"), metrics)
    with pytest.raises(ArtifactError, match=re.escape("no positive control (an older run); run `dvc repro control`")):
        CLAIMS["JSL-3"].measure(tmp_path)


def test_jsl4_counts_samples_needed_and_unstable_runs_from_the_runs_table(tmp_path):
    # two seeds: fine-tuning stays under the 5% target from n = 16 on, scratch never does (one run unstable after
    # two halvings, another halved once)
    runs = [("finetune", 4, seed, 0.3, 0, 0) for seed in range(2)] + \
        [("finetune", n, seed, 0.01, 0, 0) for n in (16, 64) for seed in range(2)] + \
        [("scratch", n, 0, 0.2, 0, int(n == 4)) for n in (4, 16, 64)] + \
        [("scratch", n, 1, 0.2, 0, 0) for n in (4, 16)] + \
        [("scratch", 64, 1, float("nan"), 1, 2)]
    write_table(tmp_path / artifact("transfer_runs"), TRANSFER_COLUMNS, runs)
    write_json(tmp_path / artifact("transfer_metrics"), {"target_error": 0.05, "largest_n": 64})
    measured = CLAIMS["JSL-4"].measure(tmp_path)
    assert (measured["finetune_n_needed"], measured["scratch_n_needed"], measured["unstable_runs"],
            measured["halved_runs"]) == (16, -1, 1 / 12, 2 / 12)
    assert measured["finetune_reaches_target"] == 1.0
    assert measured["finetune_over_scratch"] == 0.0  # scratch never reaching the target: infinitely many


def _real_seeds(natural, permuted, seeds=5):
    """ViT groups of JSL-5: accuracies, and each seed's structure score above its null, natural and permuted."""
    jitter = [0.002 * (s - seeds // 2) for s in range(seeds)]
    groups = {"vit_natural": [0.9 + j for j in jitter], "vit_permuted": [0.89 + j for j in jitter],
              "cnn_natural": [0.95 + j for j in jitter], "cnn_permuted": [0.8 + j for j in jitter]}
    for pixels, score in (("natural", natural), ("permuted", permuted)):
        groups |= {f"vit_{pixels}_structure": [score + j for j in jitter],
                   f"vit_{pixels}_final_structure": [score + j for j in jitter],
                   f"vit_{pixels}_initial_structure": [0.0] * seeds}
    return groups


@pytest.mark.parametrize("natural,permuted,verdict", [(0.4, 0.3, "holds"), (0.4, -0.2, "does not hold"),
                                                      (0.0, 0.3, "inconclusive")])
def test_jsl5_reads_final_structure_against_its_null_with_natural_images_as_the_positive_control(natural, permuted,
                                                                                                verdict):
    from vitheory.core.claims import _judge
    from vitheory.core.intervals import IntervalSettings

    record = _judge(CLAIMS["JSL-5"], _real_seeds(natural, permuted), IntervalSettings(0.95, 200, 0))
    assert record["measured"]["permuted_structure_over_null"] == pytest.approx(permuted)
    # the natural-image ViT at its null fails the positive control: the measure saw nothing, nothing is decided
    assert record["verdict"] == verdict


@pytest.mark.parametrize("cnn,vit,expected", [
    ((0.95, 0.80), (0.60, 0.40), math.log(4.0) - math.log(1.5)),  # the ViT loses more points, the CNN more of its error
    ((0.80, 0.70), (0.95, 0.90), math.log(1.5) - math.log(2.0)),
    ((1.00, 0.90), (0.90, 0.80), None),  # a perfect CNN on natural images: no error to scale
    ((0.95, 0.90), (0.90, 1.00), None),  # a perfect ViT on permuted images: a ratio of 0 has no log
])
def test_jsl5_compares_how_many_times_each_models_error_grows(cnn, vit, expected):
    """The accuracy half of JSL-5 is relative: log(CNN's permuted / natural test error) minus the ViT's; the
    absolute losses are described beside it."""
    groups = _real_seeds(0.4, 0.3, seeds=1) | {"cnn_natural": [cnn[0]], "cnn_permuted": [cnn[1]],
                                                "vit_natural": [vit[0]], "vit_permuted": [vit[1]]}
    measured = CLAIMS["JSL-5"].statistics(groups)
    assert measured["cnn_minus_vit_log_error_ratio"] == (None if expected is None else pytest.approx(expected))
    assert measured["cnn_loss_minus_vit_loss"] == pytest.approx((cnn[0] - cnn[1]) - (vit[0] - vit[1]))


def test_jsl5_reads_each_seeds_score_above_its_own_null_from_train_reals_runs(tmp_path):
    from vitheory.core.paths import run_name, runs

    for model in runs("real_models"):
        for pixels in runs("real_pixels"):
            seeds = {f"seed_{s}": {"seed": s, "test_accuracy": 0.9, "val_accuracy": 0.9, "test_loss": 0.3}
                     | ({"structure": 0.5 + 0.1 * s, "shuffled_structure": 0.2 - 0.05 * s, "initial_structure": 0.4}
                        if model.startswith("vit") else {}) for s in range(3)}
            write_json(tmp_path / artifact("real_metrics") / f"{run_name(model, pixels)}.json", {"runs": seeds})
    measured = CLAIMS["JSL-5"].measure(tmp_path)
    # each seed's final score minus its own null (0.3, 0.45, 0.6), never the initial score
    assert measured["permuted_structure_over_null"] == pytest.approx(0.45)
    assert measured["natural_final_structure"] == pytest.approx(0.6)
    assert measured["natural_initial_structure"] == pytest.approx(0.4)


# --- issue 44: what the mutation run of jsl22/claims.py showed no test reading ------------------------


def test_each_spatial_setting_is_read_from_its_own_runs_by_readers_built_inside_a_test(tmp_path):
    """PAPER builds its `_spatial_samples` readers at import, where mutmut links the function to no test that
    reads runs (its 52 mutants all survived): built here, each setting reads its own ViT, linear model and
    best linear error, all of them the run's chance, and a form never trained names the params to add it."""
    _plant(tmp_path, {"qk": _runs(0.30, 0.2)})
    jsl1, jsl2 = CLAIMS["JSL-1"], CLAIMS["JSL-2"]
    for reader, vit, glm, best, exact in [(_spatial_samples(), 0.02, 0.16, 0.14, 0.95),
                                          (_spatial_samples("ppt"), 0.02, 0.16, 0.14, 0.95),  # the run's own form
                                          (_spatial_samples("qk"), 0.30, 0.16, 0.14, 0.2),
                                          (_spatial_samples(variant_partition=True), 0.04, 0.2, 0.13, 0.7)]:
        samples = reader(tmp_path)
        first, second = jsl1.statistics(samples), jsl2.statistics(samples)
        assert (first["vit_test_error"], first["glm_test_error"], first["best_linear_test_error"]) == \
            pytest.approx((vit, glm, best))
        assert (second["final_exact"], second["initial_exact"], second["chance_overlap"]) == \
            pytest.approx((exact, 0.0, 0.28))
    message = f"{artifact('spatial_metrics')}: no runs of score form 'vanilla'; add it to spatial.ablation and run "
    with pytest.raises(ArtifactError, match=re.escape(message + "`dvc repro train_spatial`")):
        _spatial_samples("vanilla")(tmp_path)


def _with_vit_seeds(root, final, initial, chance, unstable=None, halvings=None):
    """Replace the planted run's own ViT seeds and its chance (spatial_metrics as train_spatial writes it)."""
    metrics = root / artifact("spatial_metrics")
    stored = json.loads(metrics.read_text())
    stored["runs"]["vit"] = {"final": final, "initial": initial, "unstable": unstable or [False] * len(final),
                             "halvings": halvings or [0] * len(final)}
    stored["chance"] = chance
    write_json(metrics, stored)


def test_an_unstable_seed_is_left_out_of_the_units_and_its_share_shown(tmp_path):
    """Seed 3 stayed unstable (train_spatial froze it where it diverged): whatever its frozen state measured, here
    no association and 90% error, it is neither learned nor not: the medians, the share meeting Definition 2.2
    and the unit counts are the three others', and both claims show the shares unstable and halved."""
    _plant(tmp_path, {"qk": _runs(0.30, 0.2)})
    final = [unit | {"error_rate": error, "attn_exact": exact} for unit, error, exact in
             zip(_runs(0.0, 1.0)["final"] * 2, (0.01, 0.02, 0.03, 0.9), (1.0, 1.0, 0.5, 0.0))]
    _with_vit_seeds(tmp_path, final, _runs(0.0, 1.0)["initial"] * 2, {"exact": 0.0, "overlap": 0.28},
                    unstable=[False, False, False, True], halvings=[0, 1, 0, 3])
    first = evaluate(CLAIMS["JSL-1"], "JSL22", tmp_path, SETTINGS)
    second = evaluate(CLAIMS["JSL-2"], "JSL22", tmp_path, SETTINGS)
    assert (first["measured"]["vit_test_error"], first["measured"]["vit_test_error_max"],
            first["measured"]["vit_unstable_seeds"], first["measured"]["vit_halved_seeds"]) == \
        pytest.approx((0.02, 0.03, 1 / 4, 2 / 4))
    assert (second["measured"]["seeds_meeting_definition"], second["measured"]["final_exact_min"],
            second["measured"]["unstable_seeds"]) == pytest.approx((2 / 3, 0.5, 1 / 4))
    assert first["units"]["vit"] == second["units"]["vit"] == 3 and second["units"]["vit_initial"] == 6
    # a quarter of the seeds left out: past the share, both claims are inconclusive through their condition
    assert first["conditions"]["vit_unstable_seeds <= 0.1"]["verdict"] == FAILS
    assert first["verdict"] == second["verdict"] == INCONCLUSIVE


def test_a_run_whose_every_seed_was_unstable_measures_nothing(tmp_path):
    _plant(tmp_path, {"qk": _runs(0.30, 0.2)})
    _with_vit_seeds(tmp_path, _runs(0.3, 1.0)["final"], _runs(0.0, 1.0)["initial"], {"exact": 0.0, "overlap": 0.28},
                    unstable=[True] * 3, halvings=[3] * 3)
    first, second = (evaluate(CLAIMS[claim], "JSL22", tmp_path, SETTINGS) for claim in ("JSL-1", "JSL-2"))
    assert first["measured"]["vit_test_error"] is None and second["measured"]["seeds_meeting_definition"] is None
    assert first["measured"]["vit_unstable_seeds"] == 1.0 and first["verdict"] == second["verdict"] == INCONCLUSIVE


def test_runs_written_before_the_stability_rule_are_named(tmp_path):
    _plant(tmp_path, {"qk": _runs(0.30, 0.2)})
    metrics = tmp_path / artifact("spatial_metrics")
    stored = json.loads(metrics.read_text())
    del stored["runs"]["qk"]["unstable"]
    write_json(metrics, stored)
    message = f"{artifact('spatial_metrics')}: the runs of score form 'qk' do not say which seeds were unstable"
    with pytest.raises(ArtifactError, match=re.escape(message)):
        _spatial_samples("qk")(tmp_path)


def test_jsl1_describes_its_worst_seeds_test_error(tmp_path):
    """The report shows the worst seed's error beside the median the verdict reads (0.06 against 0.02)."""
    _plant(tmp_path, {"qk": _runs(0.30, 0.2)})
    final = [unit | {"error_rate": error} for unit, error in zip(_runs(0.0, 1.0)["final"], (0.01, 0.06, 0.02))]
    _with_vit_seeds(tmp_path, final, _runs(0.0, 1.0)["initial"], {"exact": 0.0, "overlap": 0.28})
    assert CLAIMS["JSL-1"].measure(tmp_path) == pytest.approx({
        "vit_test_error": 0.02, "vit_test_error_max": 0.06, "vit_unstable_seeds": 0.0, "vit_halved_seeds": 0.0,
        "glm_test_error": 0.16,
        "best_linear_test_error": 0.14})


def test_jsl2_measures_initial_association_against_a_nonzero_chance_and_describes_every_share(tmp_path):
    """Chance at 0.05 (0 in every other planting): association 0.12 at initialisation is 0.07 above it, within
    the 0.1 margin; the shares the report describes (median, least and mean over seeds, overlaps, P P^T's own,
    the error) each from its own column of three unlike seeds."""
    _plant(tmp_path, {"qk": _runs(0.30, 0.2)})
    final = [{"error_rate": error, "attn_exact": exact, "attn_overlap": overlap, "pos_exact": pos,
              "pos_overlap": pos_overlap, "loss": 0.1} for error, exact, overlap, pos, pos_overlap in
             ((0.01, 1.0, 0.97, 0.3, 0.6), (0.03, 0.7, 0.9, 0.1, 0.4), (0.02, 1.0, 0.95, 0.2, 0.5))]
    initial = [unit | {"attn_exact": 0.12, "attn_overlap": overlap} for unit, overlap in zip(final, (0.3, 0.4, 0.35))]
    _with_vit_seeds(tmp_path, final, initial, {"exact": 0.05, "overlap": 0.28})
    record = evaluate(CLAIMS["JSL-2"], "JSL22", tmp_path, SETTINGS)
    spatial = {name: value for name, value in record["measured"].items() if not name.startswith("pos_dim_")}
    assert spatial == pytest.approx({
        "seeds_meeting_definition": 2 / 3, "final_exact": 1.0, "final_exact_min": 0.7, "final_exact_mean": 0.9,
        "final_overlap": 0.95, "initial_exact": 0.12, "initial_overlap": 0.35, "chance_exact": 0.05,
        "chance_overlap": 0.28, "initial_exact_minus_chance": 0.07, "final_positional_exact": 0.2,
        "final_positional_overlap": 0.5, "test_error": 0.02, "unstable_seeds": 0.0, "halved_seeds": 0.0})
    assert record["criteria"]["initial_exact_minus_chance <= 0.1"]["verdict"] == HOLDS


def test_jsl3_measures_association_against_each_data_sets_own_chance_and_describes_the_attention_map(tmp_path):
    """Chance at 0.15 on the control and 0.05 on the Assumption-1 data (near 0 elsewhere): P P^T at 0.2 is 0.05
    above the control's chance, within the margin, so JSL-3 holds; each described number from its own column,
    less its own data set's chance."""
    metrics = _control_metrics(0.2, 0.9)
    metrics["chance"]["exact"], metrics["positive_control"]["chance"]["exact"] = 0.15, 0.05
    write_json(tmp_path / artifact("control_metrics"), metrics)
    record = evaluate(CLAIMS["JSL-3"], "JSL22", tmp_path, SETTINGS)
    assert record["measured"] == pytest.approx({
        "vit_test_error": 0.02, "glm_test_error": 0.09, "vit_minus_glm_test_error": -0.07, "positional_exact": 0.2,
        "positional_exact_minus_chance": 0.05, "positional_overlap": 0.2, "chance_overlap": 0.4,
        "attention_exact_minus_chance": 0.7 - 0.15, "attention_overlap": 0.3, "positive_control_positional_exact": 0.9,
        "positive_control_positional_exact_minus_chance": 0.85, "positive_control_attention_exact_minus_chance": -0.05,
        "positive_control_test_error": 0.02, "vit_train_error": 0.0, "vit_stalled_seeds": 0.0,
        "vit_converged_test_error": 0.02, "unstable_seeds": 0.0, "halved_seeds": 0.0})
    assert record["verdict"] == HOLDS


@pytest.mark.parametrize("train_errors,stalled,converged_error", [
    ([0.01, 0.08, 0.02, 0.075], 0.5, 0.02),  # two students left at 7.5-8% training error stalled
    ([0.01, 0.05, 0.02, 0.0], 0.0, 0.02),    # 5% exactly still fits
    ([0.3, 0.08, 0.06, 0.2], 1.0, None),     # all stalled: no converged error to describe
])
def test_jsl3_describes_the_share_of_students_that_stalled(tmp_path, train_errors, stalled, converged_error):
    """A stall is a student whose training error on the noiseless labels stays above 5%: its share, and the
    median test error of the others (a stall's own test error, 0.1, left out of it)."""
    metrics = _control_metrics(0.0, 0.9)
    metrics["runs"]["vit"] = [dict(metrics["runs"]["vit"][0], train_error_rate=train,
                                   error_rate=0.1 if train > 0.05 else 0.02) for train in train_errors]
    metrics["runs"]["glm"] = [{"error_rate": 0.09}] * 4
    write_json(tmp_path / artifact("control_metrics"), metrics)
    measured = CLAIMS["JSL-3"].measure(tmp_path)
    assert (measured["vit_stalled_seeds"], measured["vit_converged_test_error"]) == (stalled, converged_error)


N_EDGES = (1, 4, 16)


def _reaching(method, start, seeds=3, unstable=None):
    """`seeds` alike downstream runs of one method over N_EDGES: 1% error from n = start on (None: never), 30%
    below; `unstable`, a (seed, n) unstable after three halvings (its error NaN, as transfer writes it)."""
    return [(method, n, seed, float("nan") if (seed, n) == unstable else
             0.01 if start is not None and n >= start else 0.3, int((seed, n) == unstable), 3 * ((seed, n) == unstable))
            for seed in range(seeds) for n in N_EDGES]


@pytest.mark.parametrize("finetune,scratch,unstable,measured,verdict", [
    (1, 16, None, (1, 16, 1.0, 1 / 16, 0), HOLDS),      # fine-tuning reaches the target at the grid's first n, 1
    (1, 1, None, (1, 1, 1.0, 1.0, 0), FAILS),           # both from n = 1: as many samples, not a sixteenth
    (None, 1, None, (-1, 1, 0.0, math.inf, 0), FAILS),  # fine-tuning never: more than scratch's 1, infinitely
    (None, 16, None, (-1, 16, 0.0, math.inf, 0), FAILS),
    # neither: no ratio; one run of 18 unstable, under the share
    (None, None, (2, 16), (-1, -1, 0.0, None, 1 / 18), FAILS),
])
def test_jsl4_counts_samples_needed_at_the_grids_edges(tmp_path, finetune, scratch, unstable, measured, verdict):
    """n = 1 is a grid point like any other (transfer.n_train allows it), a method never reaching the target
    needs infinitely many samples, and every seed's runs are its own (an unstable run counted once)."""
    write_table(tmp_path / artifact("transfer_runs"), TRANSFER_COLUMNS,
                _reaching("finetune", finetune) + _reaching("scratch", scratch, unstable=unstable))
    write_json(tmp_path / artifact("transfer_metrics"), {"target_error": 0.05, "largest_n": max(N_EDGES)})
    record = evaluate(CLAIMS["JSL-4"], "JSL22", tmp_path, SETTINGS)
    keys = ("finetune_n_needed", "scratch_n_needed", "finetune_reaches_target", "finetune_over_scratch",
            "unstable_runs")
    assert {key: record["measured"][key] for key in keys} == {key: value if value is None else pytest.approx(value)
                                                             for key, value in zip(keys, measured)}
    assert record["verdict"] == verdict


def _train_real_runs(root, seeds):
    """train_real's metrics for every run of the registry's models, `seeds` seeds each: the runs JSL-5 and
    JSL-6 read with accuracies unlike between seeds, any other at 0.9; the ViTs' structure 0.5 above a null
    of 0.1, and 0.4 at initialisation."""
    accuracy = {run_name(model, pixels): (0.9, 0.9, 0.9) for model in runs("real_models")
                for pixels in runs("real_pixels")} | {
        "vit_natural": (0.90, 0.92, 0.94), "vit_permuted": (0.85, 0.86, 0.87),
        "vit_positional_natural": (0.88, 0.89, 0.93), "vit_positional_permuted": (0.8, 0.8, 0.8),
        "cnn_natural": (0.95, 0.95, 0.95), "cnn_permuted": (0.7, 0.7, 0.7)}
    for model in runs("real_models"):
        for pixels in runs("real_pixels"):
            name = run_name(model, pixels)
            found = {f"seed_{s}": {"seed": s, "test_accuracy": accuracy[name][s], "val_accuracy": 0.9, "test_loss": 0.3}
                     | ({"structure": 0.6, "shuffled_structure": 0.1, "initial_structure": 0.4}
                        if model.startswith("vit") else {}) for s in range(seeds)}
            write_json(root / artifact("real_metrics") / f"{name}.json", {"runs": found})


@pytest.mark.parametrize("seeds,vanilla,positional,vit_loss", [
    (1, (0.90, 0.0), (0.88, 0.0), 0.05),
    (2, (0.91, 0.01 * math.sqrt(2)), (0.885, 0.01 / math.sqrt(2)), 0.055),
    (3, (0.92, 0.02), (0.90, math.sqrt(0.0007)), 0.06),
])
def test_jsl5_and_jsl6_are_measured_from_one_two_or_three_seeds_and_describe_their_spread(tmp_path, seeds, vanilla,
                                                                                        positional, vit_loss):
    """real.seeds may be 1 or 2: a single seed has no spread (0, not an error), and two seeds' delete-one means
    rest on one seed each; the means, standard deviations and each model's accuracy loss are described."""
    _train_real_runs(tmp_path, seeds)
    jsl5 = evaluate(CLAIMS["JSL-5"], "JSL22", tmp_path, SETTINGS)["measured"]
    assert (jsl5["vit_loss"], jsl5["cnn_loss"], jsl5["permuted_structure_over_null"]) == \
        pytest.approx((vit_loss, 0.25, 0.5))
    assert evaluate(CLAIMS["JSL-6"], "JSL22", tmp_path, SETTINGS)["measured"] == pytest.approx({
        "vanilla_mean": vanilla[0], "vanilla_std": vanilla[1], "positional_mean": positional[0],
        "positional_std": positional[1], "positional_minus_vanilla": positional[0] - vanilla[0]})


def _pos_dim_rows(root, exact_by_width, seeds, unstable=()):
    """pos_dim_sweep's runs: seed s at width w has share exact_by_width[w][s] and error 0.3 - that share / 4;
    the (width, seed) pairs in `unstable` stayed unstable after two halvings (their metrics NaN)."""
    rows = [(width, seed, 1, 2, float("nan"), float("nan"), float("nan"), float("nan")) if (width, seed) in unstable
            else (width, seed, 0, 0, 0.3 - exact[seed] / 4, exact[seed], 0.5, 0.5)
            for width, exact in exact_by_width.items() for seed in range(seeds)]
    write_table(root / artifact("pos_dim_runs"), list(pos_dim.COLUMNS), rows)


def test_the_width_sweep_is_no_claim_of_the_paper():
    """The width sweep is ours (the paper states no dependence on d_p): no criterion or condition of
    [JSL22]'s claims reads it, so it counts in none of their verdicts. (The next claim id stays free for a
    claim of the paper: docs/LAYOUT.md's toy takes it.)"""
    assert not any(c.quantity.startswith("pos_dim_") for claim in CLAIMS.values()
                   for c in (*claim.criteria, *claim.conditions))


def test_the_width_sweep_beside_jsl2_leaves_unstable_seeds_out_and_shows_their_share(tmp_path):
    """Three unlike seeds, the third unstable at d_p = 128: it is left out of that width's means and of the
    comparison of widths, the share of unstable seeds is shown, and each seed's runs are its own; the quantities
    sit in JSL-2's record (evaluate, as the report) and its REPORT.md section, its own setting only."""
    _plant(tmp_path, {"qk": _runs(0.30, 0.2)})
    _pos_dim_rows(tmp_path, {32: (0.1, 0.2, 0.3), 128: (0.9, 0.8, 0.7)}, 3, unstable={(128, 2)})
    record = evaluate(CLAIMS["JSL-2"], "JSL22", tmp_path, SETTINGS)
    described = {name: value for name, value in record["measured"].items() if name.startswith("pos_dim_")}
    assert described == pytest.approx({
        "pos_dim_32_exact": 0.2, "pos_dim_32_test_error": 0.25, "pos_dim_32_unstable": 0.0, "pos_dim_32_halved": 0.0,
        "pos_dim_128_exact": 0.85, "pos_dim_128_test_error": (0.075 + 0.1) / 2, "pos_dim_128_unstable": 1 / 3,
        "pos_dim_128_halved": 1 / 3,
        "pos_dim_exact_largest_minus_smallest": 0.7, "pos_dim_seeds_associating_more_at_largest": 1.0,
        "pos_dim_test_error_smallest_minus_largest": 0.25 - (0.075 + 0.1) / 2})
    assert record["units"]["pos_dim_seeds"] == 3
    section = "\n".join(claim_section(record, "", SETTINGS.confidence))  # REPORT.md's section of JSL-2
    assert "pos_dim_seeds (3)" in section and "| pos_dim_128_unstable | 0.3333 |" in section
    assert not any(name.startswith("pos_dim_") for variant in record["variants"].values()
                   for name in variant["measured"])


def test_a_seed_tied_across_widths_does_not_associate_more_and_a_narrow_instability_leaves_the_seed_out(tmp_path):
    """Seed 0 meets the definition equally at both widths: no gain, not "more" at the largest. Seed 2 was unstable
    at the narrow width: it has no gain to compare, and the comparison is seeds 0 and 1's."""
    _plant(tmp_path, {"qk": _runs(0.30, 0.2)})
    _pos_dim_rows(tmp_path, {32: (0.5, 0.2, 0.3), 128: (0.5, 0.8, 0.9)}, 3, unstable={(32, 2)})
    measured = evaluate(CLAIMS["JSL-2"], "JSL22", tmp_path, SETTINGS)["measured"]
    assert measured["pos_dim_seeds_associating_more_at_largest"] == pytest.approx(1 / 2)
    assert measured["pos_dim_exact_largest_minus_smallest"] == pytest.approx((0.0 + 0.6) / 2)


def test_jsl2s_setting_says_the_width_sweep_is_described_not_counted_and_how_instability_counts(default_params):
    regime = CLAIMS["JSL-2"].regime(default_params)
    assert "Beside the verdict, described and not counted among the paper's claims" in regime
    assert ("the paper states no dependence on the positional width; its encodings live in R^(d x D), d = poly(D), "
            "Assumption 2)") in regime
    assert ("the quantities `pos_dim_*`: per width, the mean share of patches meeting Definition 2.2 on the attention "
            "map and the test error over the seeds that were not unstable (the stability rule above; None: all "
            "were)") in regime
    assert "up to 3 times; one that diverges at every rate tried is unstable" in regime
    assert regime.endswith("the largest width against the smallest over the seeds stable at both.")


def test_a_width_whose_every_seed_was_unstable_has_no_mean(tmp_path):
    _plant(tmp_path, {"qk": _runs(0.30, 0.2)})
    _pos_dim_rows(tmp_path, {32: (0.1, 0.2), 128: (0.9, 0.8)}, 2, unstable={(32, 0), (32, 1)})
    measured = evaluate(CLAIMS["JSL-2"], "JSL22", tmp_path, SETTINGS)["measured"]
    width_32 = ("pos_dim_32_unstable", "pos_dim_32_exact", "pos_dim_32_test_error",
                "pos_dim_exact_largest_minus_smallest")
    assert [measured[name] for name in width_32] == [1, None, None, None]


def test_the_width_sweep_decides_nothing_of_jsl2(tmp_path):
    """JSL-2's criteria and verdict are the same whichever way the sweep goes: it is described, not judged."""
    _plant(tmp_path, {"qk": _runs(0.30, 0.2)})
    records = []
    for narrow, wide in ((0.1, 0.95), (0.95, 0.1)):
        _pos_dim_rows(tmp_path, {32: [narrow] * 3, 128: [wide] * 3}, 3)
        records.append(evaluate(CLAIMS["JSL-2"], "JSL22", tmp_path, SETTINGS))
    assert [r["measured"]["pos_dim_exact_largest_minus_smallest"] for r in records] == pytest.approx([0.85, -0.85])
    assert records[0]["criteria"] == records[1]["criteria"] and records[0]["verdict"] == records[1]["verdict"]


def test_the_width_sweep_compares_the_largest_width_with_the_smallest_of_three(tmp_path):
    """pos_dim_sweep.pos_dims may hold more than two widths: 8 seeds associate at d_p = 128 and not at 16, while
    the middle width 32 associates least and must not stand in for the largest."""
    _plant(tmp_path, {"qk": _runs(0.30, 0.2)})
    _pos_dim_rows(tmp_path, {width: [share + wiggle(seed, k, 0.01) for seed in range(SEEDS)]
                             for k, (width, share) in enumerate(((16, 0.3), (32, 0.1), (128, 0.95)))}, SEEDS)
    measured = evaluate(CLAIMS["JSL-2"], "JSL22", tmp_path, SETTINGS)["measured"]
    assert measured["pos_dim_exact_largest_minus_smallest"] == pytest.approx(0.65, abs=0.02)
    assert measured["pos_dim_seeds_associating_more_at_largest"] == 1.0


def test_regimes_state_the_runs_settings_and_which_scores_and_permutation_it_ran(default_params):
    """The report prints each claim's regime: the count of sets L = D / C and the random features q (D - C)
    it states, which inputs the control's scores read, whether the permutation is finer than a ViT patch, and
    the grids it names must be the params' own. The default params score from P alone and permute single
    pixels; `other` scores from X + P and permutes whole patches."""
    data, spatial = default_params.generate.spatial, default_params.spatial
    said = CLAIMS["JSL-1"].regime(default_params)
    assert f"sets of C = {data.set_size}, L = {data.n_patches // data.set_size})" in said
    assert f"q (D - C) = {data.q * (data.n_patches - data.set_size):.3g} random features" in said
    assert all(f"`{form}` at {lr:g}" in CLAIMS["JSL-2"].regime(default_params)
               for form, lr in zip(spatial.ablation, spatial.ablation_lr_mixing))
    assert f"n in {list(default_params.transfer.n_train)}, " in CLAIMS["JSL-4"].regime(default_params)
    assert f"d_p = {default_params.handbuilt.pos_dim} (seed" in CLAIMS["JSL-7"].regime(default_params)
    assert f"d_p in {list(default_params.pos_dim_sweep.pos_dims)} at D = {data.n_patches}" in \
        CLAIMS["JSL-2"].regime(default_params)
    patch = default_params.real.models.vit.patch
    assert (default_params.control.vit.scores, default_params.real.permutation_block) == ("positions", 1) and patch > 1
    other = parse_params(merge(yaml.safe_load((Path(__file__).resolve().parents[2] / "params.yaml").read_text()),
                               {"control": {"vit": {"scores": "tokens"}}, "real": {"permutation_block": patch}}))
    assert "(scores from P alone)" in CLAIMS["JSL-3"].regime(default_params)
    assert "(scores from X + P)" in CLAIMS["JSL-3"].regime(other)
    assert CLAIMS["JSL-5"].regime(default_params).endswith("(finer than the ViT's patch: no patch order undoes it).")
    assert CLAIMS["JSL-5"].regime(other).endswith(
        "(whole patches: a ViT with learned positions is then equivalent to the unpermuted one).")
    # a block that is not a multiple of the patch cuts across patches: no patch order undoes it either
    straddling = SimpleNamespace(images=default_params.images,
                                 real=replace(default_params.real, permutation_block=patch + 1))
    assert CLAIMS["JSL-5"].regime(straddling).endswith("(squares that cut across the ViT's patches: no patch order undoes it).")


def test_jsl2_says_whether_the_run_is_inside_assumption_2(default_params):
    """[JSL22]'s Assumption 2 takes d = poly(D) (d = 384 > D = 196 in its example): the default run's d = 32 <
    D = 64 is outside it, and its setting says so; a run with d >= D does not."""
    data = default_params.generate.spatial
    assert data.dim < data.n_patches
    assert f"Outside Assumption 2: d = {data.dim} < D = {data.n_patches}" in CLAIMS["JSL-2"].regime(default_params)
    wide = parse_params(merge(yaml.safe_load((Path(__file__).resolve().parents[2] / "params.yaml").read_text()),
                              {"generate": {"spatial": {"dim": data.n_patches}}}))
    said = CLAIMS["JSL-2"].regime(wide)
    assert "Outside" not in said and f"d = {data.n_patches} >= D = {data.n_patches}" in said


def test_jsl5_and_jsl6_read_only_the_runs_of_the_models_they_name(tmp_path):
    """A registered model a claim does not name is no unit of it: JSL-5 reads the ViT's and the CNN's runs,
    JSL-6 the two ViTs' natural and permuted runs; a model the registry lacks is refused in one line."""
    from vitheory.core.paths import run_name, runs
    from vitheory.jsl22.claims import real_samples

    for model in runs("real_models"):
        for pixels in runs("real_pixels"):
            seeds = {f"seed_{s}": {"seed": s, "test_accuracy": 0.9, "val_accuracy": 0.9, "test_loss": 0.3}
                     | ({"structure": 0.5, "shuffled_structure": 0.2, "initial_structure": 0.4}
                        if model.startswith("vit") else {}) for s in range(3)}
            write_json(tmp_path / artifact("real_metrics") / f"{run_name(model, pixels)}.json", {"runs": seeds})
    groups = {claim: {name.split("_natural")[0].split("_permuted")[0] for name in CLAIMS[claim].samples(tmp_path)}
              for claim in ("JSL-5", "JSL-6")}
    assert groups == {"JSL-5": {"vit", "cnn"}, "JSL-6": {"vit", "vit_positional"}}
    with pytest.raises(ValueError, match=r"^train_real trains no model \['no_such_model'\]"):
        real_samples("vit", "no_such_model")
