"""[JSL22] checks read the run's own score form, each ablation form and the variant partition from the
stored per-seed runs, and compute every summary from them."""

import json

import pytest

from vitheory.core.artifacts import write_json, write_table
from vitheory.core.errors import ArtifactError
from vitheory.core.paths import artifact
from vitheory.jsl22.claims import PAPER
from vitheory.jsl22.training import TRANSFER_COLUMNS

CLAIMS = {claim.id: claim for claim in PAPER.claims}


def _runs(error, exact, positional=None):
    """Three seeds alike; `positional` is P P^T's association where it differs from the attention map's."""
    positional = exact if positional is None else positional
    unit = {"error_rate": error, "pos_exact": positional, "pos_overlap": positional, "attn_exact": exact,
            "attn_overlap": exact, "loss": 0.1}
    start = {"pos_exact": 0.0, "pos_overlap": 0.3, "attn_exact": 0.0, "attn_overlap": 0.3}
    return {"initial": [unit | start] * 3, "final": [unit] * 3}


def _plant(root, ablation):
    runs = {"vit": _runs(0.02, 0.95), "glm": [{"error_rate": 0.16}] * 3} | ablation
    variant = {"runs": {"vit": _runs(0.04, 0.7), "glm": [{"error_rate": 0.2}] * 3}, "best_linear_error": 0.13}
    write_json(root / artifact("spatial_metrics"), {
        "runs": runs, "score_form": "ppt", "best_linear_error": 0.14, "chance": {"exact": 0.0, "overlap": 0.28},
        "variant": variant})


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
                "pos_exact": exact, "pos_overlap": exact}
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
    from vitheory.core.claims import IntervalSettings, evaluate

    write_json(tmp_path / artifact("control_metrics"), _control_metrics(control_exact, positive_exact))
    record = evaluate(CLAIMS["JSL-3"], "JSL22", tmp_path, IntervalSettings(confidence=0.95, resamples=100, seed=0))
    assert record["verdict"] == verdict


def test_jsl3_without_a_positive_control_names_the_stage(tmp_path):
    metrics = _control_metrics(0.0, 0.9)
    del metrics["positive_control"]
    write_json(tmp_path / artifact("control_metrics"), metrics)
    with pytest.raises(ArtifactError, match="run `dvc repro control`"):
        CLAIMS["JSL-3"].measure(tmp_path)


def test_jsl4_counts_samples_needed_and_divergences_from_the_runs_table(tmp_path):
    # two seeds: fine-tuning stays under the 5% target from n = 16 on, scratch never does (one run diverged)
    runs = [("finetune", 4, seed, 0.3, 0) for seed in range(2)] + \
        [("finetune", n, seed, 0.01, 0) for n in (16, 64) for seed in range(2)] + \
        [("scratch", n, 0, 0.2, 0) for n in (4, 16, 64)] + [("scratch", n, 1, 0.2, 0) for n in (4, 16)] + \
        [("scratch", 64, 1, float("nan"), 1)]
    write_table(tmp_path / artifact("transfer_runs"), TRANSFER_COLUMNS, runs)
    write_json(tmp_path / artifact("transfer_metrics"), {"target_error": 0.05, "largest_n": 64})
    measured = CLAIMS["JSL-4"].measure(tmp_path)
    assert (measured["finetune_n_needed"], measured["scratch_n_needed"], measured["diverged_runs"]) == (16, -1, 1)
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
    from vitheory.core.claims import IntervalSettings, _judge

    record = _judge(CLAIMS["JSL-5"], _real_seeds(natural, permuted), IntervalSettings(0.95, 200, 0))
    assert record["measured"]["permuted_structure_over_null"] == pytest.approx(permuted)
    # the natural-image ViT at its null fails the positive control: the measure saw nothing, nothing is decided
    assert record["verdict"] == verdict


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
