"""[PK22]'s verdict table: every claim planted to hold, not hold and be inconclusive, and each condition
planted unmet, judged by `evaluate` from artifacts written as the pipeline writes them."""

import pytest
from verdict_tables import SEEDS, Row, check, missing_rows, params, per_seed, wiggle

import math

from vitheory.core.artifacts import write_json, write_table
from vitheory.core.claims import FAILS, HOLDS, INCONCLUSIVE
from vitheory.core.paths import artifact
from vitheory.pk22 import buildup, feature_maps, frequency, hessian, landscape, lesion, locality, noise, trainings
from vitheory.pk22.claims import PAPER
from vitheory.pk22.tables import table_path

# --- PK-1, PK-6: trainings on fractions of the data --------------------------------------------------

# per fraction: (training NLL, training error, test error)
VIT_UNDERFITS = {0.1: (1.0, 0.30, 0.50), 0.25: (0.6, 0.15, 0.35), 1.0: (0.2, 0.05, 0.20)}
VIT_OVERFITS = {0.1: (0.01, 0.0, 0.50), 0.25: (0.05, 0.01, 0.35), 1.0: (0.2, 0.05, 0.20)}
CNN = {0.1: (0.05, 0.01, 0.40), 0.25: (0.03, 0.0, 0.30), 1.0: (0.01, 0.0, 0.15)}
ALTERNET = {0.1: (0.05, 0.01, 0.35), 0.25: (0.03, 0.0, 0.25), 1.0: (0.01, 0.0, 0.12)}


def _trainings(vit=VIT_UNDERFITS, cnn=CNN, alternet=ALTERNET):
    """8 seeds of each model (one profile for all, or one per seed); a seed's spread is the same for every
    model at a fraction, so a difference of models is the planted one on every seed."""
    def build(root):
        rows = [(model, fraction, seed, *(v + wiggle(seed, 3 * i + j, 0.003) for j, v in enumerate(entries[:2])),
                 0.5, entries[2] + wiggle(seed, 3 * i + 2, 0.003))
                for model, profiles in (("vit", vit), ("cnn", cnn), ("alternet", alternet))
                for seed, profile in enumerate(per_seed(profiles))
                for i, (fraction, entries) in enumerate(profile.items())]
        write_table(root / artifact("pk_train_runs"), list(trainings.COLUMNS), rows)
    return build


def _vit_sharing(shares):
    """The underfitting ViT whose training error rises by `share` of its test error's rise, one per seed."""
    return [VIT_UNDERFITS | {0.1: (1.0, 0.05 + 0.30 * share, 0.50)} for share in shares]


def _alternet_small_data(gaps):
    """AlterNet at the CNN's small-data test errors plus one gap per seed."""
    return [ALTERNET | {f: (0.05, 0.01, CNN[f][2] + gap) for f in (0.1, 0.25)} for gap in gaps]


# --- PK-2, PK-8: the Hessian -----------------------------------------------------------------------

HESSIAN_MODELS = ("vit", "cnn", "vit_gap", "vit_small", "alternet")
SHARES_HOLD = {"vit": 0.2, "cnn": 0.05, "vit_gap": 0.1, "vit_small": 0.3, "alternet": 0.1}
LAMBDA_MAX_HOLD = {"vit": 10.0, "cnn": 10.0, "vit_gap": 10.0, "vit_small": 10.0, "alternet": 5.0}


def _hessians(batches=2, **changes):
    """8 seeds of two mini-batches per model: the top eigenvalues, both ends of the spectrum and a density
    of two nodes, +1 and -1, weighted so that the negative curvature share is the planted one. `changes`:
    `<model>_share` or `<model>_max`, a scalar or one per seed."""
    share = {m: changes.get(f"{m}_share", SHARES_HOLD[m]) for m in HESSIAN_MODELS}
    largest = {m: changes.get(f"{m}_max", LAMBDA_MAX_HOLD[m]) for m in HESSIAN_MODELS}

    def build(root):
        spectra, density = [], []
        for model in HESSIAN_MODELS:
            for seed in range(SEEDS):
                for batch in range(batches):
                    high, s = per_seed(largest[model])[seed], per_seed(share[model])[seed] + wiggle(seed, batch)
                    spectra += [(model, seed, batch, "top", 0, high), (model, seed, batch, "top", 1, -s * high),
                                (model, seed, batch, "min", 0, -s * high), (model, seed, batch, "max", 0, high)]
                    density += [(model, seed, batch, 0, 0, 1.0, 1 - s), (model, seed, batch, 0, 1, -1.0, s)]
        write_table(root / table_path("hessian"), list(hessian.COLUMNS), spectra)
        write_table(root / table_path("density"), list(hessian.DENSITY_COLUMNS), density)
    return build


# --- PK-3, PK-4: feature maps across blocks --------------------------------------------------------

BLOCKS = {"vit": ("embed", "msa", "mlp", "msa", "mlp"), "cnn": ("stem", "conv", "conv"),
          "alternet": ("stem", "conv", "msa")}
CLAIMED = {("vit", "msa"): -0.5, ("vit", "mlp"): 0.3, ("cnn", "conv"): 0.3, ("alternet", "msa"): -0.4,
           ("alternet", "conv"): 0.2}  # each kind's change across a block, with the claimed sign
REVERSED = {block: -change for block, change in CLAIMED.items()}


def _profiles(high_frequency=CLAIMED, variance=CLAIMED):
    """8 seeds' profiles, one feature map per block at one size: each block changes the high-frequency log
    amplitude and the variance by its kind's change (a scalar, or one per seed)."""
    def build(root):
        rows = []
        for model, kinds in BLOCKS.items():
            for seed in range(SEEDS):
                level = {"high_frequency": 0.0, "variance": 1.0}
                for index, kind in enumerate(kinds):
                    if index:
                        for k, (quantity, changes) in enumerate((("high_frequency", high_frequency),
                                                                 ("variance", variance))):
                            level[quantity] += per_seed(changes[model, kind])[seed] + wiggle(seed, index + k, 0.02)
                    rows.append((model, seed, index, kind, index / len(kinds), 64, level["high_frequency"],
                                 level["variance"]))
        write_table(root / table_path("profiles"), list(feature_maps.COLUMNS), rows)
    return build


# --- PK-9: variance at the end of a stage ---------------------------------------------------------

# two stages (256 tokens, then 64 after a downsampling block), the stem apart; each block's variance
STAGES = {"alternet": (("embed", 256), ("conv", 256), ("conv", 256), ("conv", 64), ("conv", 64), ("msa", 64)),
          "cnn": (("embed", 256), ("conv", 256), ("conv", 256), ("conv", 64), ("conv", 64), ("conv", 64))}
PEAKS = (0.2, 0.5, 1.0, 0.6, 0.9, 1.4)  # rising to each stage's last block, falling into the next stage
RISES = (0.2, 0.5, 1.0, 1.2, 1.3, 1.4)  # rising steadily, into the next stage too: no peak
DIPS = (0.2, 1.0, 0.5, 1.4, 0.9, 0.6)  # largest at each stage's first block


def _stage_profiles(alternet=PEAKS, cnn=PEAKS):
    """8 seeds' two-stage profiles of AlterNet and the CNN: the variances of each block (one profile, a tuple,
    or a list of one per seed)."""
    def build(root):
        rows = [(model, seed, index, kind, index / 5, tokens, 0.0,
                 (variances if isinstance(variances, list) else [variances] * SEEDS)[seed][index]
                 * (1 + wiggle(seed, index, 0.02)))
                for model, variances in (("alternet", alternet), ("cnn", cnn)) for seed in range(SEEDS)
                for index, (kind, tokens) in enumerate(STAGES[model])]
        write_table(root / table_path("profiles"), list(feature_maps.COLUMNS), rows)
    return build


# --- PK-5: band-passed noise -----------------------------------------------------------------------

VIT_DROPS = {0.0: 0.1, 0.25: 0.2, 0.5: 0.1, 1.0: 0.05}  # robust to high frequencies
CNN_DROPS = {0.0: 0.2, 0.25: 0.05, 0.5: 0.1, 1.0: 0.2}  # fragile to them


def _noise(vit=VIT_DROPS, cnn=CNN_DROPS, clean=0.9):
    """8 seeds' accuracy drop per band (each a scalar, or one per seed), both normalisations alike."""
    def build(root):
        rows = [(model, seed, normalisation, f, clean, per_seed(drop)[seed] + wiggle(seed, i))
                for model, drops in (("vit", vit), ("cnn", cnn)) for seed in range(SEEDS)
                for normalisation in noise.NORMALISATIONS for i, (f, drop) in enumerate(drops.items())]
        write_table(root / table_path("noise"), list(noise.COLUMNS), rows)
    return build


# --- PK-7: lesions ---------------------------------------------------------------------------------


def _lesions(margin, cnn_margin=0.0):
    """8 seeds: AlterNet's two stages each closed by attention, whose removal costs `margin` (one per seed, or
    a scalar) more than the worst earlier block's; the CNN of its shape, whose closing convolutions cost
    `cnn_margin` more (the control); the ViT as one stage of three blocks (described)."""
    def build(root):
        rows = []
        for seed in range(SEEDS):
            closing = 0.05 + per_seed(margin)[seed] + wiggle(seed)
            alternet = [(0, 0, "conv", 0.05), (0, 1, "msa", closing), (1, 0, "conv", 0.03), (1, 1, "conv", 0.05),
                        (1, 2, "msa", closing)]
            cnn_closing = 0.05 + cnn_margin + wiggle(seed + 1)
            cnn = [(0, 0, "conv", 0.05), (0, 1, "conv", cnn_closing), (1, 0, "conv", 0.03), (1, 1, "conv", 0.05),
                   (1, 2, "conv", cnn_closing)]
            vit = [(0, block, kind, drop) for block, (msa, mlp) in enumerate(((0.02, 0.2), (0.05, 0.1), (0.3, 0.4)))
                   for kind, drop in (("msa", msa), ("mlp", mlp))]
            rows += [(model, seed, index, kind, stage, position, drop) for model, blocks in
                     (("alternet", alternet), ("cnn", cnn), ("vit", vit)) for index, (stage, position, kind, drop) in enumerate(blocks)]
        write_table(root / table_path("lesion"), list(lesion.COLUMNS), rows)
    return build


# --- PK-10: the loss landscape -----------------------------------------------------------------------

# per model: the curvature a of L = a (alpha^2 + beta^2), a ripple r cos(2 pi alpha) + r cos(2 pi beta) on the
# plane (negative second differences where it peaks), the permutation line's barrier height
LANDSCAPE_HOLDS = {"vit": (1.0, 0.3, 0.2), "cnn": (4.0, 0.0, 0.2), "alternet": (2.0, 0.0, 0.2)}


def _landscapes(**changes):
    """8 seeds of each model's slices on a 5 x 5 plane and 9-point lines over [-1, 1], matched loss 0.5:
    `changes` replaces a model's (a, r, h), each entry a scalar or one per seed."""
    planted = LANDSCAPE_HOLDS | changes

    def build(root):
        rows = []
        for model, (curvature, ripple, barrier) in planted.items():
            for seed in range(SEEDS):
                a = per_seed(curvature)[seed] * (1 + wiggle(seed, 1, 0.05))
                r, h = per_seed(ripple)[seed], per_seed(barrier)[seed]
                for alpha in landscape.grid(1.0, 5):
                    for beta in landscape.grid(1.0, 5):
                        nll = a * (alpha ** 2 + beta ** 2) + r * (math.cos(2 * math.pi * alpha) + math.cos(2 * math.pi * beta))
                        rows.append((model, seed, landscape.PLANE, 0, alpha, beta, nll, 10.0))
                for line in range(2):
                    rows += [(model, seed, landscape.LINE, line, t, 0.0, a * t ** 2, 10.0) for t in landscape.grid(1.0, 9)]
                rows += [(model, seed, landscape.PERMUTATION, 0, i / 8, 0.0, h * math.sin(math.pi * i / 8), 10.0)
                         for i in range(9)]
        write_table(root / artifact("pk_landscape_table"), list(landscape.COLUMNS), rows)
        write_json(root / artifact("pk_landscape_metrics"), {"device": "cpu", "weight_decay": 0.05, "loss_rise": 0.5,
                                                              "tolerance": 1e-5, "extent": 1.0})
    return build


# --- PK-11: filtered images and cue conflicts ------------------------------------------------------

# per model: (accuracy on low-passed, on high-passed images, share of conflicts read as the low-pass digit,
# as the high-pass one); clean accuracy 0.9
LOW_READER, HIGH_READER = (0.7, 0.2, 0.4, 0.2), (0.3, 0.6, 0.15, 0.45)
CONTROL_READER = (0.8, 0.1, 0.6, 0.1)


def _frequencies(vit=LOW_READER, cnn=HIGH_READER, control=CONTROL_READER):
    """8 seeds of each model at cutoffs 0.25 and 0.5 (the control's), ten classes; each model's entries a
    tuple, or a list of one per seed."""
    def build(root):
        rows = [(model, seed, cutoff, 0.9, *(v + wiggle(seed, k, 0.01) for k, v in enumerate(per_seed_tuple(entries, seed))))
                for model, entries in (("vit", vit), ("cnn", cnn), (frequency.CONTROL, control))
                for seed in range(SEEDS) for cutoff in (0.25, 0.5)]
        write_table(root / artifact("pk_frequency_table"), list(frequency.COLUMNS), rows)
        write_json(root / artifact("pk_frequency_metrics"), {"device": "cpu", "classes": 10, "control_cutoff": 0.5})
    return build


def per_seed_tuple(entries, seed):
    """A model's planted entries on one seed: one tuple for all, or a list of one per seed."""
    return entries[seed] if isinstance(entries, list) else entries




# --- PK-12: local attention -----------------------------------------------------------------------

# per model: (test accuracy, negative curvature share, lambda_max); the control's accuracy apart
LOCAL_HOLDS = {"vit": (0.80, 0.20, 10.0), "vit_window3": (0.82, 0.10, 6.0), "vit_window5": (0.81, 0.15, 8.0)}


def _locality(control=0.6, batches=2, **changes):
    """8 seeds: each model's accuracy and the Hessian of `batches` mini-batches (the global ViT's in
    pk_analysis's tables, with one more mini-batch there that PK-12 must not read); `changes` replaces a
    model's entries, each a scalar or one per seed."""
    planted = LOCAL_HOLDS | changes

    def build(root):
        rows, pk_spectra, pk_density, spectra, density = [], [], [], [], []
        for model, (accuracy, share, largest) in planted.items():
            for seed in range(SEEDS):
                rows.append((model, seed, int(model[-1]) if model != "vit" else 0,
                             0.5, per_seed(accuracy)[seed] + wiggle(seed, 1, 0.002)))
                for batch in range(batches + (model == "vit")):
                    s, high = per_seed(share)[seed] + wiggle(seed, batch), per_seed(largest)[seed]
                    if batch == batches:  # beyond PK-12's mini-batches: a share and lambda_max that would flip it
                        s, high = 0.0, 0.1
                    target = (pk_spectra, pk_density) if model == "vit" else (spectra, density)
                    target[0].append((model, seed, batch, "max", 0, high))
                    target[1].extend([(model, seed, batch, 0, 0, 1.0, 1 - s), (model, seed, batch, 0, 1, -1.0, s)])
            rows += [("off_grid", seed, 3, 0.5, per_seed(control)[seed]) for seed in range(SEEDS)] if model == "vit" else []
        write_table(root / artifact("pk_locality_table"), list(locality.COLUMNS), rows)
        write_json(root / artifact("pk_locality_metrics"), {"device": "cpu", "windows": [3, 5], "control_window": 3})
        write_json(root / artifact("pk_locality_hessian_metrics"), {"device": "cpu", "hessian_batches": batches})
        write_table(root / table_path("hessian"), list(hessian.COLUMNS), pk_spectra)
        write_table(root / table_path("density"), list(hessian.DENSITY_COLUMNS), pk_density)
        write_table(root / artifact("pk_locality_hessian"), list(hessian.COLUMNS), spectra)
        write_table(root / artifact("pk_locality_density"), list(hessian.DENSITY_COLUMNS), density)
    return build


# --- PK-13: placements of the attention blocks ------------------------------------------------------

PLACED_HOLDS = {"cnn": 0.80, "alternet": 0.86, "stage_start": 0.82, "model_end": 0.83, "lesioned": 0.5}


def _placements(**changes):
    """8 seeds of each placement's test accuracy (a scalar or one per seed)."""
    planted = PLACED_HOLDS | changes

    def build(root):
        write_table(root / artifact("pk_buildup_table"), list(buildup.COLUMNS),
                    [(model, seed, 0.5, per_seed(accuracy)[seed] + wiggle(seed, 2, 0.002))
                     for model, accuracy in planted.items() for seed in range(SEEDS)])
    return build

ALTERNATING = [-1, 1, -1, 1.1, -1, 1, -1, 1]  # half the seeds each way, the mean slightly positive

ROWS = [
    # PK-1: means over seeds of the rises from all the data to the smallest fraction
    Row("PK-1", _trainings(), HOLDS, "training NLL and error rise with the test error on every seed"),
    Row("PK-1", _trainings(vit=VIT_OVERFITS), FAILS, "the ViT fits its few images: overfitting"),
    Row("PK-1", _trainings(vit=_vit_sharing([0.2, 0.8, 0.25, 0.75, 0.2, 0.8, 0.25, 0.7])), INCONCLUSIVE,
        "the share of the test error's rise seen in training straddles 0.5 (0.49)"),
    # PK-6
    Row("PK-6", _trainings(), HOLDS, "AlterNet 5 points under the CNN on small data on every seed"),
    Row("PK-6", _trainings(alternet=_alternet_small_data([0.05] * SEEDS)), FAILS, "AlterNet 5 points over the CNN"),
    Row("PK-6", _trainings(alternet=_alternet_small_data([0.04 * s for s in ALTERNATING])), INCONCLUSIVE,
        "AlterNet 4 points over or under the CNN by seed (mean 0.05 over)"),
    Row("PK-6", _trainings(cnn=CNN | {0.1: (0.0, 0.0, 0.005), 0.25: (0.0, 0.0, 0.005)},
                           alternet=ALTERNET | {0.1: (0.0, 0.0, 0.008), 0.25: (0.0, 0.0, 0.008)}),
        INCONCLUSIVE, "both models at their ceiling on small data, AlterNet 0.3 points over",
        unmet="least_test_error_small_data", criteria=FAILS),
    # PK-2: differences of negative curvature shares (Welch over the models' seeds)
    Row("PK-2", _hessians(), HOLDS,
        "the ViT's share over the CNN's, the small-data ViT's over it, GAP's under the small-data ViT's"),
    Row("PK-2", _hessians(vit_share=0.05, cnn_share=0.2), FAILS, "the CNN's share over the ViT's"),
    Row("PK-2", _hessians(vit_gap_share=0.35), FAILS, "GAP's share over the class-token ViT's on the same small data"),
    Row("PK-2", _hessians(vit_gap_share=0.25), HOLDS,
        "GAP's share over the full-data ViT's but under the small-data one's: GAP is compared on small data"),
    Row("PK-2", _hessians(vit_gap_share=[0.3 + 0.05 * s for s in ALTERNATING]), INCONCLUSIVE,
        "GAP's share 5 points over or under the small-data ViT's by seed (mean 0.06 points over)"),
    # PK-8: a log ratio of lambda_max, mean over seeds
    Row("PK-8", _hessians(), HOLDS, "AlterNet's lambda_max half the CNN's on every seed"),
    Row("PK-8", _hessians(alternet_max=20.0), FAILS, "AlterNet's lambda_max twice the CNN's"),
    Row("PK-8", _hessians(alternet_max=[10 + 4 * s for s in ALTERNATING]), INCONCLUSIVE,
        "AlterNet's lambda_max 4 over or under the CNN's by seed (mean over)"),
    # PK-3, PK-4: paired changes across blocks, decided by the exact sign-flip test over seeds
    Row("PK-3", _profiles(), HOLDS, "attention lowers the high frequencies, conv and MLP raise them, on every seed"),
    Row("PK-3", _profiles(high_frequency=REVERSED), FAILS, "every block's sign reversed on every seed"),
    Row("PK-3", _profiles(high_frequency=CLAIMED | {("vit", "msa"): [0.5 * s for s in ALTERNATING]}), INCONCLUSIVE,
        "the ViT's attention lowers them on half the seeds, raises them on half"),
    Row("PK-4", _profiles(), HOLDS, "attention lowers the variance, conv and MLP raise it, on every seed"),
    Row("PK-4", _profiles(variance=REVERSED), FAILS, "every block's sign reversed on every seed"),
    Row("PK-4", _profiles(variance=CLAIMED | {("alternet", "msa"): [0.4 * s for s in ALTERNATING]}), INCONCLUSIVE,
        "AlterNet's attention lowers it on half the seeds, raises it on half"),
    # PK-5: profiles over frequency, mean over seeds
    Row("PK-5", _noise(), HOLDS, "the ViT robust to high frequencies, the CNN fragile"),
    Row("PK-5", _noise(vit=CNN_DROPS, cnn=VIT_DROPS), FAILS, "the profiles swapped"),
    Row("PK-5", _noise(vit=VIT_DROPS | {1.0: [0.35 + 0.1 * s for s in ALTERNATING]}, clean=1.0), INCONCLUSIVE,
        "the ViT's high-frequency drop straddles the CNN's profile by seed (mean 0.1 points over)"),
    Row("PK-5", _noise(vit=CNN_DROPS, cnn=VIT_DROPS, clean=0.55), INCONCLUSIVE,
        "the CNN left at 35% under high-frequency noise (collapsed), profiles swapped",
        unmet="least_noisy_accuracy", criteria=FAILS),
    # PK-7: paired margins of the closing attention block
    Row("PK-7", _lesions(0.1), HOLDS, "the closing attention block costs 10 points more on every seed"),
    Row("PK-7", _lesions(-0.04), FAILS, "an earlier block costs more on every seed"),
    Row("PK-7", _lesions(0.1, cnn_margin=0.2), FAILS,
        "the CNN's closing convolutions stand out more: the last block of a stage, not attention"),
    Row("PK-7", _lesions([0.03 * s for s in ALTERNATING]), INCONCLUSIVE, "3 points more or less by seed"),
    # PK-9: the CNN's rise to a stage's end and fall into the next, paired directions over seeds
    Row("PK-9", _stage_profiles(), HOLDS, "the CNN's variance rises to each stage's last block and falls after it"),
    Row("PK-9", _stage_profiles(alternet=DIPS), HOLDS, "AlterNet's profile, described, decides nothing"),
    Row("PK-9", _stage_profiles(cnn=RISES), FAILS,
        "the CNN's variance rises steadily, into the next stage too (the committed run's pattern): no peak"),
    Row("PK-9", _stage_profiles(cnn=DIPS), FAILS, "the CNN's variance largest at each stage's first block"),
    Row("PK-9", _stage_profiles(cnn=[PEAKS, RISES] * (SEEDS // 2)), INCONCLUSIVE,
        "the CNN's variance falls into the next stage on half the seeds and rises on the other half"),
    # PK-10: paired directions over seeds (exact sign-flip)
    Row("PK-10", _landscapes(), HOLDS, "the ViT rippled and flatter than the CNN, AlterNet flatter, on every seed"),
    Row("PK-10", _landscapes(vit=(8.0, 0.3, 0.2)), FAILS, "the ViT curves twice as much as the CNN"),
    Row("PK-10", _landscapes(vit=(1.0, [0.3, 0.0] * (SEEDS // 2), 0.2)), INCONCLUSIVE,
        "the ViT's plane rippled on half the seeds, as convex as the CNN's on the others"),
    Row("PK-10", _landscapes(vit=(8.0, 0.3, 0.0), cnn=(4.0, 0.0, 0.0), alternet=(2.0, 0.0, 0.0)), INCONCLUSIVE,
        "no barrier on the permutation lines: the control reads no non-convexity",
        unmet="least_permutation_negative_share", criteria=FAILS),
    # PK-11: paired directions over seeds; the control and the conflicts' reading as conditions
    Row("PK-11", _frequencies(), HOLDS, "the ViT reads the low frequencies, the CNN the high, on every seed"),
    Row("PK-11", _frequencies(vit=HIGH_READER, cnn=LOW_READER), FAILS, "the two models swapped"),
    Row("PK-11", _frequencies(vit=[(0.7, 0.2, 0.1, 0.5), (0.7, 0.2, 0.5, 0.1)] * (SEEDS // 2)), INCONCLUSIVE,
        "the ViT follows the low-pass digit less than the CNN on half the seeds, more on the others"),
    Row("PK-11", _frequencies(vit=HIGH_READER, cnn=LOW_READER, control=(0.8, 0.1, 0.1, 0.6)), INCONCLUSIVE,
        "the control, trained on low-passed images, follows the high-pass digit", unmet="control_low_cue_share",
        criteria=FAILS),
    Row("PK-11", _frequencies(vit=(0.3, 0.6, 0.02, 0.05), cnn=(0.7, 0.2, 0.05, 0.02)), INCONCLUSIVE,
        "the conflicts read as either digit at chance (7 in 100), the models swapped",
        unmet="least_cue_decided_over_chance", criteria=FAILS),
    # PK-12: paired directions over seeds; the off-grid control as a condition
    Row("PK-12", _locality(), HOLDS, "both windows more accurate and flatter than the global ViT on every seed"),
    Row("PK-12", _locality(vit_window3=(0.80, 0.30, 6.0), vit_window5=(0.81, 0.25, 8.0)), FAILS,
        "the windows' negative curvature share above the global ViT's"),
    Row("PK-12", _locality(vit_window3=(0.75, 0.10, 6.0)), FAILS, "the 3 x 3 window 5 points under the global ViT"),
    Row("PK-12", _locality(vit_window3=(0.82, 0.10, [4.0, 16.0] * (SEEDS // 2)),
                           vit_window5=(0.81, 0.15, [8.0, 12.0] * (SEEDS // 2))), INCONCLUSIVE,
        "the windows' lambda_max under the global ViT's on half the seeds, over on the others"),
    Row("PK-12", _locality(control=0.9, vit_window3=(0.75, 0.10, 6.0)), INCONCLUSIVE,
        "the 3 x 3 window read off its grid as well as on it: the control sees no locality",
        unmet="window_minus_off_grid_accuracy", criteria=FAILS),
    # PK-13: paired directions over seeds; the lesioned AlterNet as a condition
    Row("PK-13", _placements(), HOLDS, "attention closing the stage beats it at the stage's start and the model's end"),
    Row("PK-13", _placements(stage_start=0.90), FAILS, "attention at the stage's start 4 points over the official one"),
    Row("PK-13", _placements(model_end=[0.83, 0.89] * (SEEDS // 2)), INCONCLUSIVE,
        "attention at the model's end under the official placement on half the seeds, over on the others"),
    Row("PK-13", _placements(lesioned=0.90, stage_start=0.90), INCONCLUSIVE,
        "the AlterNet without its closing attention reads as well as with it: the control finds nothing",
        unmet="stage_end_minus_lesioned_accuracy", criteria=FAILS),

]


@pytest.mark.parametrize("row", params(ROWS))
def test_verdict(tmp_path, row):
    check(PAPER, row, tmp_path)


def test_every_claim_has_its_three_outcomes_and_every_condition_unmet():
    assert missing_rows(PAPER, ROWS) == []
