"""[PK22] checks on planted numbers: each verdict follows the quantity the paper names, and a condition
the regime does not meet makes the claim inconclusive whatever the rest says."""

import math
import statistics

import pytest

from vitheory.core.artifacts import write_table
from vitheory.core.claims import FAILS, HOLDS, INCONCLUSIVE, claim_verdict, evaluate
from vitheory.core.intervals import IntervalSettings
from vitheory.pk22 import noise
from vitheory.pk22.claims import PAPER
from vitheory.pk22.tables import table_path

CLAIMS = {claim.id: claim for claim in PAPER.claims}


def _lesions(msa_drop, conv_drop):
    """One AlterNet seed: stage 0 two conv blocks, stage 1 a conv block then its closing attention block."""
    return [{"stage": 0, "position": 0, "kind": "conv", "accuracy_drop": 0.5},
            {"stage": 0, "position": 1, "kind": "conv", "accuracy_drop": 0.01},
            {"stage": 1, "position": 1, "kind": "conv", "accuracy_drop": conv_drop},
            {"stage": 1, "position": 2, "kind": "msa", "accuracy_drop": msa_drop}]


def _cnn_lesions(closing_drop):
    """One seed of the CNN of AlterNet's shape: every block a convolution; stage 0's closing block stands out."""
    return [{"stage": 0, "position": 0, "kind": "conv", "accuracy_drop": 0.01},
            {"stage": 0, "position": 1, "kind": "conv", "accuracy_drop": 0.6},
            {"stage": 1, "position": 1, "kind": "conv", "accuracy_drop": 0.1},
            {"stage": 1, "position": 2, "kind": "conv", "accuracy_drop": closing_drop}]


@pytest.mark.parametrize("msa_drop,conv_drop,holds", [(0.3, 0.1, True), (0.05, 0.2, False)])
def test_pk7_compares_a_stages_closing_attention_block_with_the_blocks_before_it(msa_drop, conv_drop, holds):
    vit = [_vit_lesions(last_msa_drop=0.3)] * 2
    measured = CLAIMS["PK-7"].statistics({"alternet": [_lesions(msa_drop, conv_drop)] * 2,
                                          "cnn": [_cnn_lesions(0.1)] * 2, "vit": vit})
    # stage 0 has no attention block: only stage 1 counts, its conv block against its attention block
    assert measured["end_of_stage_msa_minus_earlier_blocks"] == pytest.approx(msa_drop - conv_drop)
    assert CLAIMS["PK-7"].criteria[0].holds(measured["end_of_stage_msa_minus_earlier_blocks"]) is holds


def _vit_lesions(last_msa_drop):
    """One depth-3 ViT seed: every block's attention and MLP branch, one stage."""
    drops = {(0, "msa"): 0.02, (0, "mlp"): 0.2, (1, "msa"): 0.05, (1, "mlp"): 0.1, (2, "msa"): last_msa_drop,
             (2, "mlp"): 0.4}
    return [{"stage": 0, "position": block, "kind": kind, "accuracy_drop": drop} for (block, kind), drop in drops.items()]


@pytest.mark.parametrize("last_msa_drop,holds", [(0.3, True), (0.15, False)])
def test_pk7_reads_the_vit_as_one_stage_closed_by_its_last_attention_branch(last_msa_drop, holds):
    measured = CLAIMS["PK-7"].statistics({"alternet": [_lesions(0.3, 0.1)] * 2, "cnn": [_cnn_lesions(0.1)] * 2,
                                          "vit": [_vit_lesions(last_msa_drop)] * 2})
    # the last MSA against the largest drop of the blocks before it (block 0's MLP, 0.2); the last MLP is not before it
    assert measured["vit_last_msa_minus_earlier_blocks"] == pytest.approx(last_msa_drop - 0.2)
    assert (measured["vit_last_msa_minus_earlier_blocks"] > 0) is holds
    # described, not decided: the ViT's single stage cannot contrast the end of a stage with the end of a model
    assert "vit_last_msa_minus_earlier_blocks" not in [c.quantity for c in CLAIMS["PK-7"].criteria]
    assert CLAIMS["PK-7"].criteria[0].holds(measured["end_of_stage_msa_minus_earlier_blocks"])


@pytest.mark.parametrize("cnn_closing_drop,holds", [(0.15, True), (0.4, False)])
def test_pk7_control_the_cnn_of_alternets_shape_on_the_stages_alternet_closes_with_attention(cnn_closing_drop, holds):
    measured = CLAIMS["PK-7"].statistics({"alternet": [_lesions(0.3, 0.1)] * 2,
                                          "cnn": [_cnn_lesions(cnn_closing_drop)] * 2, "vit": [_vit_lesions(0.3)] * 2})
    # stage 1 only, where AlterNet closes with attention: the CNN's stage 0 closing block (0.59 above) is left out
    assert measured["cnn_closing_conv_minus_earlier_blocks"] == pytest.approx(cnn_closing_drop - 0.1)
    assert measured["alternet_minus_cnn_closing_margin"] == pytest.approx(0.2 - (cnn_closing_drop - 0.1))
    control = next(c for c in CLAIMS["PK-7"].criteria if c.quantity == "alternet_minus_cnn_closing_margin")
    assert control.holds(measured["alternet_minus_cnn_closing_margin"]) is holds


def _hessian_unit(low, high, share=0.1):
    """One seed: two mini-batches with the same spectrum."""
    return [{"top": [high, -abs(low)], "min": low, "max": high, "share": share}] * 2


def test_pk2_reads_both_ends_of_the_spectrum_not_the_top_five_alone():
    samples = {"vit": [_hessian_unit(-10, 40, 0.2)] * 3, "cnn": [_hessian_unit(-0.5, 50, 0.01)] * 3,
               "vit_small": [_hessian_unit(-20, 30, 0.3)] * 3, "vit_gap": [_hessian_unit(-2, 40, 0.05)] * 3}
    measured = CLAIMS["PK-2"].statistics(samples)
    assert measured["vit_negative_curvature"] == pytest.approx(10 / 40)  # described
    assert measured["vit_minus_cnn_negative_curvature"] == pytest.approx(10 / 40 - 0.5 / 50)
    assert measured["vit_minus_cnn_negative_curvature_share"] == pytest.approx(0.2 - 0.01)
    assert measured["small_data_minus_vit_negative_curvature_share"] == pytest.approx(0.3 - 0.2)
    assert measured["gap_minus_vit_small_negative_curvature_share"] == pytest.approx(0.05 - 0.3)
    # every comparison decides on the spectral share alone
    assert {c.quantity for c in CLAIMS["PK-2"].criteria} == {
        f"{name}_negative_curvature_share" for name in ("vit_minus_cnn", "small_data_minus_vit", "gap_minus_vit_small")}
    assert all(c.holds(measured[c.quantity]) for c in CLAIMS["PK-2"].criteria)
    samples["vit_small"] = [_hessian_unit(-40, 30, 0.1)] * 3  # a larger ratio, a smaller share: the share decides
    measured = CLAIMS["PK-2"].statistics(samples)
    assert not all(c.holds(measured[c.quantity]) for c in CLAIMS["PK-2"].criteria)



@pytest.mark.parametrize("alternet_max,holds", [(15, True), (30, False)])
def test_pk8_compares_alternet_with_the_cnn_of_its_shape_and_describes_the_vit(alternet_max, holds):
    samples = {"vit": [_hessian_unit(-10, 80)] * 3, "cnn": [_hessian_unit(-0.5, 20)] * 3,
               "alternet": [_hessian_unit(-1, alternet_max)] * 3}
    measured = CLAIMS["PK-8"].statistics(samples)
    assert measured["vit_over_cnn_lambda_max"] == pytest.approx(4.0)  # unlike models: described, not decisive
    assert measured["log_alternet_over_cnn_lambda_max"] == pytest.approx(math.log(alternet_max / 20))
    assert all(c.holds(measured[c.quantity]) for c in CLAIMS["PK-8"].criteria) is holds


def test_pk5_compares_profiles_and_needs_no_collapse():
    def unit(low_drop, high_drop, clean=0.9, dc_drop=0.5):
        # frequency 0, a uniform brightness shift, is left out of the profile whatever it costs
        return {0.0: (clean, dc_drop), 0.125: (clean, low_drop), 1.0: (clean, high_drop)}

    measured = CLAIMS["PK-5"].statistics({"vit": [unit(0.3, 0.1)] * 2, "cnn": [unit(0.1, 0.3)] * 2})
    assert measured["vit_minus_cnn_high_minus_low"] == pytest.approx(-0.4)
    assert measured["least_noisy_accuracy"] == pytest.approx(0.6)
    assert measured["cnn_drop_dc"] == pytest.approx(0.5)
    collapsed = CLAIMS["PK-5"].statistics({"vit": [unit(0.3, 0.1)] * 2,
                                           "cnn": [unit(0.1, 0.6, clean=0.7, dc_drop=0.1)] * 2})
    condition = CLAIMS["PK-5"].conditions[0]
    assert not condition.holds(collapsed["least_noisy_accuracy"])
    assert claim_verdict([HOLDS], [FAILS]) == INCONCLUSIVE  # the regime cannot show it: not a failure


def test_pk5_decides_on_the_official_attack_and_states_equal_rms_noise_as_its_variant(tmp_path):
    """A noise table where the official rows show the claim and the equal-rms rows the opposite: the
    verdict follows the first, the variant the second; frequency 0 stays out of both."""
    rows = []
    for seed in range(4):
        for normalisation, vit_high, cnn_high in (("official", 0.05, 0.30), ("rms", 0.35, 0.05)):
            for model, high in (("vit", vit_high), ("cnn", cnn_high)):
                low = 0.2 + 0.01 * seed
                rows += [(model, seed, normalisation, 0.0, 0.9, 0.6 if model == "cnn" else 0.0),
                         (model, seed, normalisation, 0.25, 0.9, low), (model, seed, normalisation, 1.0, 0.9, high)]
    write_table(tmp_path / table_path("noise"), noise.COLUMNS, rows)
    record = evaluate(CLAIMS["PK-5"], "PK22", tmp_path, IntervalSettings(confidence=0.95, bootstrap=100, seed=0))
    assert record["measured"]["vit_minus_cnn_high_minus_low"] == pytest.approx(0.05 - 0.30)
    assert record["verdict"] == HOLDS
    (variant,) = record["variants"].values()
    assert variant["measured"]["vit_minus_cnn_high_minus_low"] == pytest.approx(0.35 - 0.05)
    assert variant["verdict"] == FAILS


def test_pk6_compares_on_small_data_and_needs_error_left():
    def seed(alternet, cnn):
        return {0.1: (0.0, 0.0, alternet), 1.0: (0.0, 0.0, 0.001)}, {0.1: (0.0, 0.0, cnn), 1.0: (0.0, 0.0, 0.002)}

    units = [seed(0.10, 0.15), seed(0.12, 0.14)]
    measured = CLAIMS["PK-6"].statistics({"alternet": [a for a, _ in units], "cnn": [c for _, c in units]})
    assert measured["alternet_minus_cnn_small_data"] == pytest.approx(-0.035)
    assert measured["least_test_error_small_data"] == pytest.approx(0.11)  # the lower of the mean errors
    assert measured["alternet_minus_cnn_all_data"] == pytest.approx(-0.001)



def test_pk2_units_are_seeds_with_their_mini_batches_inside(tmp_path):
    """The Hessian table's rows of one seed form one unit: 3 seeds of 4 mini-batches are 3 units, and
    the statistics average the mini-batches inside their seed."""
    from vitheory.core.artifacts import write_table
    from vitheory.pk22 import hessian
    from vitheory.pk22.tables import table_path

    keys = [(model, seed, batch) for model in ("vit", "cnn") for seed in range(3) for batch in range(4)]
    rows = [row for model, seed, batch in keys
            for row in ((model, seed, batch, "top", 0, 1.0), (model, seed, batch, "min", 0, -float(seed)),
                        (model, seed, batch, "max", 0, 10.0 + batch))]
    density = [(model, seed, batch, -1, node, eigenvalue, 0.5) for model, seed, batch in keys
               for node, eigenvalue in enumerate((-1.0, 1.0))]
    for name, columns, table in (("hessian", hessian.COLUMNS, rows), ("density", hessian.DENSITY_COLUMNS, density)):
        (tmp_path / table_path(name)).parent.mkdir(parents=True, exist_ok=True)
        write_table(tmp_path / table_path(name), list(columns), table)
    samples = CLAIMS["PK-8"].samples(tmp_path)
    assert {model: [len(seed) for seed in seeds] for model, seeds in samples.items()} == {"vit": [4] * 3, "cnn": [4] * 3}
    assert [{batch["min"] for batch in seed} for seed in samples["vit"]] == [{0.0}, {-1.0}, {-2.0}]
    assert statistics.mean(batch["max"] for seed in samples["vit"] for batch in seed) == pytest.approx(11.5)


def _training_units(small_train_error, small_test_error, small_train_loss, seeds=5):
    """Each seed's (training NLL, training error, test error) on 10% of the data and on all of it."""
    return [{0.1: (small_train_loss, small_train_error + 0.01 * s, small_test_error + 0.01 * s),
             1.0: (0.1, 0.03, 0.05)} for s in range(seeds)]


@pytest.mark.parametrize("small,holds", [
    ((0.65, 0.70, 1.8), True),   # the ViT fails to fit its few images: training NLL and test error rise together
    ((0.00, 0.45, 0.01), False),  # it memorises them and fails on new ones: overfitting
])
def test_pk1_tells_poor_optimisation_from_overfitting(small, holds):
    units = _training_units(*small)
    measured = CLAIMS["PK-1"].statistics({"vit": units, "cnn": _training_units(0.0, 0.2, 0.01)})
    assert all(c.holds(measured[c.quantity]) for c in CLAIMS["PK-1"].criteria) is holds
    assert measured["vit_train_share_of_test_error_rise"] == pytest.approx(
        (small[0] + 0.02 - 0.03) / (small[1] + 0.02 - 0.05))


def _profile(kinds_and_values):
    """One seed's feature-map profile: the embedding, then a block of each kind with its value after it."""
    rows = [{"kind": "embed", "tokens": 16, "high_frequency": 0.0, "variance": 0.0}]
    return rows + [{"kind": kind, "tokens": 16, "high_frequency": value, "variance": value}
                   for kind, value in kinds_and_values]


@pytest.mark.parametrize("alternet_msa,holds", [(-0.5, True), (0.5, False)])
def test_pk3_and_pk4_read_alternets_closing_attention_blocks_too(alternet_msa, holds):
    """The ViT and the CNN as claimed in both; AlterNet's attention block after its conv decides."""
    vit = _profile([("msa", -0.5), ("mlp", 0.5)])
    cnn = _profile([("conv", 0.5), ("conv", 1.0)])
    alternet = _profile([("conv", 1.0), ("msa", 1.0 + alternet_msa)])
    for claim in ("PK-3", "PK-4"):
        measured = CLAIMS[claim].statistics({"vit": [vit] * 3, "cnn": [cnn] * 3, "alternet": [alternet] * 3})
        assert measured["alternet_msa_change"] == pytest.approx(alternet_msa)
        assert all(c.holds(measured[c.quantity]) for c in CLAIMS[claim].criteria) is holds
