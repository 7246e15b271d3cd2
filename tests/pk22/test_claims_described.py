"""[PK22] what each claim's record says beside its verdict, and the edges of what decides it: planted inputs
with known answers, through the claims' samples and statistics and through `evaluate` (the report's path).
Issue 44: each test closes gaps that mutants of vitheory/pk22/claims.py showed (docs/MUTATION.md)."""

import math
import shutil

import pytest
from pk22.test_pk_claims import CLAIMS, _training_units
from pk22.test_verdict_table import ALTERNET, CNN, VIT_UNDERFITS, _hessians, _trainings
from verdict_tables import SEEDS, SETTINGS

from vitheory.core.artifacts import write_table
from vitheory.core.claims import FAILS, HOLDS, evaluate
from vitheory.core.paths import artifact
from vitheory.pk22 import claims, feature_maps, noise, trainings
from vitheory.pk22.tables import table_path

# --- PK-3, PK-4: each kind's mean change and its share of blocks with the claimed sign --------------

KINDS = {"vit": ("msa", "mlp", "msa", "mlp"), "cnn": ("conv", "conv"), "alternet": ("conv", "msa", "conv", "msa")}
# two seeds' high-frequency changes across each block; the ViT's second attention block and AlterNet's
# second conv block change nothing (exactly 0: neither sign), every change under 1 in size
CHANGES = {"vit": ((-0.4, 0.3, 0.0, 0.5), (0.2, -0.1, -0.6, 0.3)), "cnn": ((0.2, -0.3), (0.4, 0.1)),
           "alternet": ((0.3, -0.2, 0.0, -0.5), (-0.1, 0.4, 0.2, -0.3))}
# per kind: the mean change, and the share of (block, seed) pairs with the claimed sign (attention < 0, others > 0)
DESCRIBED = {("vit", "msa"): (-0.2, 2 / 4), ("vit", "mlp"): (0.25, 3 / 4), ("cnn", "conv"): (0.1, 3 / 4),
             ("alternet", "msa"): (-0.15, 3 / 4), ("alternet", "conv"): (0.1, 2 / 4)}


def _changed_profile(kinds, changes):
    """One seed's profile at one size: the embedding, then each block changing the high-frequency log
    amplitude by its change and the variance by half of it."""
    rows = [{"kind": "embed", "tokens": 16, "high_frequency": 0.0, "variance": 1.0}]
    for kind, change in zip(kinds, changes, strict=True):
        rows.append({"kind": kind, "tokens": 16, "high_frequency": rows[-1]["high_frequency"] + change,
                     "variance": rows[-1]["variance"] + change / 2})
    return rows


@pytest.mark.parametrize("claim,quantity,scale", [("PK-3", "high_frequency", 1.0), ("PK-4", "variance", 0.5)])
def test_pk3_and_pk4_describe_each_kinds_mean_change_and_share_with_the_claimed_sign(claim, quantity, scale):
    """The record's share beside each mean: a block that changes nothing has neither sign, and a change
    under 1 counts. The measure is built here as well as at import, so that mutmut links the function to
    this test (PAPER builds it at import, inside no test)."""
    samples = {model: [_changed_profile(KINDS[model], seed) for seed in CHANGES[model]] for model in KINDS}
    expected = {}
    for (model, kind), (mean, share) in DESCRIBED.items():
        expected |= {f"{model}_{kind}_change": mean * scale, f"{model}_{kind}_share_with_claimed_sign": share}
    assert claims._block_changes(quantity)(samples) == pytest.approx(expected)
    assert CLAIMS[claim].statistics(samples) == pytest.approx(expected)


# --- PK-5: the noise table's units -----------------------------------------------------------------

def test_pk5_reads_each_seed_of_each_noise_normalisation_as_its_own_unit(tmp_path):
    """Rows of three seeds, written out of seed order: each normalisation's units are its own rows, one per
    seed in seed order; the claim reads the official ones, its variant the equal-rms ones. The readers are
    built here as well as at import, so that mutmut links the function to this test."""
    def entry(model, seed, normalisation, frequency):  # (clean accuracy, accuracy drop), distinct everywhere
        offset = (0.01 if normalisation == "rms" else 0.0) + (0.002 if model == "cnn" else 0.0)
        return 0.9 - 0.05 * seed - offset, 0.1 * frequency + 0.02 * seed + offset

    seeds, frequencies = (2, 0, 1), (0.0, 0.5, 1.0)
    write_table(tmp_path / table_path("noise"), list(noise.COLUMNS),
                [(model, seed, normalisation, f, *entry(model, seed, normalisation, f)) for seed in seeds
                 for normalisation in noise.NORMALISATIONS for model in ("vit", "cnn") for f in frequencies])
    expected = {n: {model: [{f: entry(model, seed, n, f) for f in frequencies} for seed in sorted(seeds)]
                    for model in ("vit", "cnn")} for n in noise.NORMALISATIONS}
    for normalisation in noise.NORMALISATIONS:
        assert claims._noise_samples(normalisation)(tmp_path) == expected[normalisation]
    assert CLAIMS["PK-5"].samples(tmp_path) == expected["official"]
    assert CLAIMS["PK-5"].variants[0].samples(tmp_path) == expected["rms"]


@pytest.mark.parametrize("bands", [(0.0, 0.25, 0.5), (0.25, 0.5, 1.0), (0.0, 0.5, 1.0)])
def test_pk5_describes_the_drop_at_frequency_0_whatever_the_highest_band(bands):
    """pk.frequencies may be any bands in [0, 1]: frequency 0's drop is described when it is one of them,
    whether or not 1.0 is, and the profile runs from the lowest non-zero band to the highest."""
    drops = {"vit": {0.0: 0.3, 0.25: 0.2, 0.5: 0.15, 1.0: 0.05}, "cnn": {0.0: 0.5, 0.25: 0.05, 0.5: 0.1, 1.0: 0.2}}
    samples = {model: [{f: (0.9, drops[model][f]) for f in bands}] * 2 for model in drops}
    measured = CLAIMS["PK-5"].statistics(samples)
    low, high = min(f for f in bands if f > 0), max(bands)
    for model in drops:
        assert measured[f"{model}_drop_lowest"] == drops[model][low]
        assert measured[f"{model}_drop_highest"] == drops[model][high]
        assert measured.get(f"{model}_drop_dc") == (drops[model][0.0] if 0.0 in bands else None)
    assert measured["least_noisy_accuracy"] == pytest.approx(0.9 - max(drops[m][f] for m in drops for f in bands if f > 0))


# --- PK-1, PK-5, PK-6 from two seeds ---------------------------------------------------------------

def test_pk1_and_pk6_are_judged_from_two_seeds(tmp_path):
    """real.seeds may be 2: the jackknife then measures each claim on one seed left, which must be
    measurable (the smallest fraction and AlterNet's fractions read from the seed there is)."""
    _trainings(vit=[VIT_UNDERFITS] * 2, cnn=[CNN] * 2, alternet=[ALTERNET] * 2)(tmp_path)
    pk1 = evaluate(CLAIMS["PK-1"], "PK22", tmp_path, SETTINGS)
    assert pk1["units"] == {"vit": 2, "cnn": 2, "alternet": 2}
    assert pk1["measured"]["smallest_fraction"] == 0.1
    assert pk1["measured"]["vit_test_error_rise"] == pytest.approx(0.50 - 0.20, abs=0.01)
    assert pk1["verdict"] == HOLDS
    pk6 = evaluate(CLAIMS["PK-6"], "PK22", tmp_path, SETTINGS)
    assert pk6["measured"]["alternet_minus_cnn_small_data"] == pytest.approx(-0.05, abs=0.01)
    assert pk6["verdict"] == HOLDS


def test_pk5_is_judged_from_two_seeds(tmp_path):
    """The same for PK-5: each profile's bands and the least accuracy left read from the seed there is."""
    drops = {"vit": {0.0: 0.1, 0.25: 0.2, 1.0: 0.05}, "cnn": {0.0: 0.2, 0.25: 0.05, 1.0: 0.2}}
    write_table(tmp_path / table_path("noise"), list(noise.COLUMNS),
                [(model, seed, normalisation, f, 0.9, drop + 0.01 * seed) for model in drops for seed in range(2)
                 for normalisation in noise.NORMALISATIONS for f, drop in drops[model].items()])
    record = evaluate(CLAIMS["PK-5"], "PK22", tmp_path, SETTINGS)
    assert record["measured"]["vit_minus_cnn_high_minus_low"] == pytest.approx(-0.15 - 0.15)
    assert record["measured"]["least_noisy_accuracy"] == pytest.approx(0.9 - 0.2 - 0.005)
    assert record["verdict"] == HOLDS


# --- PK-1: the share of the test error's rise -------------------------------------------------------

@pytest.mark.parametrize("small_data_test_error", [0.1, 0.08])
def test_pk1_share_is_not_measured_when_the_test_error_does_not_rise(tmp_path, small_data_test_error):
    """A ViT at the same test error, or a lower one, on the smallest fraction as on all the data (at its
    ceiling, as on the quick preset's digits): no rise to share out, so the share is None, not a division by
    0 or by a fall, and the claim does not hold (nothing to explain)."""
    rows = [(model, fraction, seed, loss, 0.02, 0.5, error + 0.01 * seed)
            for model in ("vit", "cnn", "alternet") for seed in range(4)
            for fraction, loss, error in ((0.1, 0.5, small_data_test_error), (1.0, 0.1, 0.1))]
    write_table(tmp_path / artifact("pk_train_runs"), list(trainings.COLUMNS), rows)
    record = evaluate(CLAIMS["PK-1"], "PK22", tmp_path, SETTINGS)
    assert record["measured"]["vit_test_error_rise"] == pytest.approx(small_data_test_error - 0.1)
    assert record["measured"]["vit_train_share_of_test_error_rise"] is None
    assert record["measured"]["cnn_train_share_of_test_error_rise"] is None
    assert record["verdict"] == FAILS


def test_pk1_describes_both_ends_of_each_models_curves_and_the_smallest_fraction():
    """Beside the rises, the record shows each mean at the smallest fraction and on all the data."""
    measured = CLAIMS["PK-1"].statistics({"vit": _training_units(0.65, 0.70, 1.8),
                                          "cnn": _training_units(0.0, 0.2, 0.01)})
    # _training_units: 10% of the data at (NLL, error + 0.01 s, test error + 0.01 s) for seeds s = 0..4
    # (mean + 0.02), all of it at (0.1, 0.03, 0.05)
    ends = {"vit": (1.8, 0.67, 0.72), "cnn": (0.01, 0.02, 0.22)}
    expected = {"smallest_fraction": 0.1}
    for model, small in ends.items():
        full = (0.1, 0.03, 0.05)
        for which, s, f in zip(("train_loss", "train_error", "test_error"), small, full):
            expected |= {f"{model}_{which}_smallest": s, f"{model}_{which}_full": f, f"{model}_{which}_rise": s - f}
        expected[f"{model}_train_share_of_test_error_rise"] = (small[1] - full[1]) / (small[2] - full[2])
    assert measured == pytest.approx(expected)


# --- PK-2, PK-8: the Hessian ---------------------------------------------------------------------------

def _batch(top, low, high, share):
    return {"top": list(top), "min": low, "max": high, "share": share}


def test_pk2_describes_the_official_nep_and_ape_and_each_models_curvature_beside_the_shares():
    """NEP: the share of the top eigenvalues below 0 (0 itself is not negative, 0.5 is not); APE: the mean of
    those above 0 (0.5 is one, 0 is not), 0 where none is. The described differences of the ratio and of
    the NEP, by name and sign; GAP's ViT against the class token's on the same smallest fraction."""
    samples = {"vit": [[_batch((40.0, 0.5, 0.0, -10.0), -10.0, 40.0, 0.2)]] * 2,
               "cnn": [[_batch((50.0, 2.0, 1.0, -0.5), -0.5, 50.0, 0.01)]] * 2,
               "vit_small": [[_batch((30.0, -20.0, -5.0, 0.8), -20.0, 30.0, 0.3)]] * 2,
               "vit_gap": [[_batch((-3.0, -1.0), -3.0, 0.9, 0.1)]] * 2}  # no positive eigenvalue among the top
    measured = CLAIMS["PK-2"].statistics(samples)
    nep, ape = {"vit": 1 / 4, "cnn": 1 / 4, "vit_small": 2 / 4, "vit_gap": 1.0}, {
        "vit": (40 + 0.5) / 2, "cnn": (50 + 2 + 1) / 3, "vit_small": (30 + 0.8) / 2, "vit_gap": 0.0}
    ratio = {"vit": 10 / 40, "cnn": 0.5 / 50, "vit_small": 20 / 30, "vit_gap": 3 / 0.9}
    share = {"vit": 0.2, "cnn": 0.01, "vit_small": 0.3, "vit_gap": 0.1}
    low = {"vit": -10.0, "cnn": -0.5, "vit_small": -20.0, "vit_gap": -3.0}
    expected = {}
    for m in nep:
        expected |= {f"{m}_nep": nep[m], f"{m}_ape": ape[m], f"{m}_negative_curvature": ratio[m],
                     f"{m}_negative_curvature_share": share[m], f"{m}_lambda_min": low[m]}
    expected |= {"vit_minus_cnn_negative_curvature": ratio["vit"] - ratio["cnn"],
                 "small_data_minus_vit_negative_curvature": ratio["vit_small"] - ratio["vit"],
                 "gap_minus_vit_small_negative_curvature": ratio["vit_gap"] - ratio["vit_small"],
                 "vit_nep_minus_cnn_nep": 0.0,
                 "vit_minus_cnn_negative_curvature_share": 0.2 - 0.01,
                 "small_data_minus_vit_negative_curvature_share": 0.3 - 0.2,
                 "gap_minus_vit_small_negative_curvature_share": 0.1 - 0.3}
    assert measured == pytest.approx(expected)


@pytest.mark.parametrize("claim", ["PK-2", "PK-8"])
def test_pk2_and_pk8_refuse_a_density_table_of_other_mini_batches_than_the_spectras(tmp_path, claim):
    """The density's units are paired with the spectra's one for one: a density of three mini-batches per
    seed against spectra of two is refused, not paired off by position (seed 1's first mini-batch would get
    seed 0's third density)."""
    _hessians(batches=2)(tmp_path)
    _hessians(batches=3)(tmp_path / "other")
    shutil.copyfile(tmp_path / "other" / table_path("density"), tmp_path / table_path("density"))
    with pytest.raises(ValueError, match="zip"):
        CLAIMS[claim].samples(tmp_path)


# --- PK-9: stages ----------------------------------------------------------------------------------

# one seed's profile: the stem's embedding (the largest variance, at stage 1's size), a stage of two blocks
# rising, one of three whose middle block is the largest, one of a single block; (kind, tokens, variance)
THREE_STAGES = (("embed", 16, 5.0), ("conv", 16, 1.0), ("conv", 16, 3.0), ("conv", 4, 1.0), ("conv", 4, 4.0),
                ("msa", 4, 2.0), ("conv", 1, 3.0))
# the last block against the largest before it, over the stages of two blocks or more (the stem left out)
STAGE_ENDS = (math.log(3.0 / 1.0) + math.log(2.0 / 4.0)) / 2
# from each stage's last block into the next stage's first
INTO_NEXT = (math.log(1.0 / 3.0) + math.log(3.0 / 2.0)) / 2


def _stage_table(root, profile=THREE_STAGES):
    rows = [(model, seed, index, kind, index / (len(profile) - 1), tokens, 0.0, variance)
            for model in ("alternet", "cnn") for seed in range(SEEDS)
            for index, (kind, tokens, variance) in enumerate(profile)]
    write_table(root / table_path("profiles"), list(feature_maps.COLUMNS), rows)


def test_pk9_holds_on_each_stages_last_block_against_the_largest_before_it_the_stem_apart(tmp_path):
    """Decided on: a two-block stage counts; a three-block stage's last block is compared with its largest
    earlier block, the middle one, not the first; a one-block stage has nothing to compare and is left out;
    the stem's embedding, at stage 1's size and the largest variance, is no block of stage 1. Every seed's
    mean is log(3) / 2 + log(1/2) / 2 > 0, and the variance falls into the next stage on the mean of the
    boundaries (INTO_NEXT < 0): it holds."""
    _stage_table(tmp_path)
    record = evaluate(CLAIMS["PK-9"], "PK22", tmp_path, SETTINGS)
    for model in ("alternet", "cnn"):
        assert record["measured"][f"{model}_stage_end_log_variance_over_earlier"] == pytest.approx(STAGE_ENDS)
    assert record["verdict"] == HOLDS


def test_pk9_measures_the_change_into_each_next_stage_and_the_stages():
    """The fall after a peak: the log change from each stage's last block into the next stage's first, mean
    over the boundaries (the CNN's decides, AlterNet's is described), and the number of stages."""
    profile = [{"kind": kind, "tokens": tokens, "variance": variance} for kind, tokens, variance in THREE_STAGES]
    measured = CLAIMS["PK-9"].statistics({"alternet": [profile] * 2, "cnn": [profile] * 2})
    for model in ("alternet", "cnn"):
        assert measured[f"{model}_log_variance_change_into_next_stage"] == pytest.approx(INTO_NEXT)
        assert measured[f"{model}_stages"] == 3



def test_pk9_with_one_stage_has_no_change_into_a_next_stage():
    """A profile of one stage (every block at one size): its end is measured, the change into a next stage is
    None (there is none), for every seed and model, and the stages counted are 1."""
    profile = [{"kind": kind, "tokens": 16, "variance": variance}
               for kind, variance in (("embed", 5.0), ("conv", 1.0), ("conv", 2.0))]
    measured = CLAIMS["PK-9"].statistics({"alternet": [profile] * 2, "cnn": [profile] * 2})
    for model in ("alternet", "cnn"):
        assert measured[f"{model}_stage_end_log_variance_over_earlier"] == pytest.approx(math.log(2.0))
        assert measured[f"{model}_log_variance_change_into_next_stage"] is None
        assert measured[f"{model}_stages"] == 1
