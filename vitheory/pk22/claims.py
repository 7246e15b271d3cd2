"""[PK22] claims PK-1 to PK-13: statements, the numbers that measure them, thresholds and regimes."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from vitheory.core.artifacts import read_json, read_table
from vitheory.core.claims import REAL, Claim, Criterion, Paper, Variant
from vitheory.core.figures import figure_path
from vitheory.core.intervals import MEAN, PAIRED, SETTINGS_GROUP, Measured, Samples
from vitheory.core.paths import artifact
from vitheory.core.units import Row, grouped_units, split
from vitheory.images.params import dataset_named
from vitheory.pk22 import (buildup, feature_maps, figures, frequency, hessian, landscape, lesion, locality, noise,
                           trainings)
from vitheory.pk22.feature_maps import block_changes
from vitheory.pk22.tables import density_units, table_path


def _models_setting(params: Any) -> str:
    return (f"The natural-image ViT and CNN of `train_real` ({params.real.seeds} seeds each), on "
            f"{params.pk.n_images} test images of dataset {dataset_named(params.images)}.")


def _trainings_setting(params: Any) -> str:
    cfg = params.pk_train
    return (f"Dataset {dataset_named(params.images)}, with train_real's recipe: the ViT and the CNN "
            f"({params.real.seeds} seeds) on class-balanced fractions {list(cfg.fractions)} of the training "
            f"images (and all of them, train_real's models), each trained for as many optimiser steps as all "
            f"the data; AlterNet with widths {list(cfg.alternet.widths)}, blocks {list(cfg.alternet.blocks)} "
            f"and attention blocks {list(cfg.alternet.attention)} at the end of each stage against that CNN, of the "
            f"same stages and blocks with conv blocks only, {params.real.seeds} seeds, on the same fractions and all "
            "the data.")


def _hessian_regime(params: Any) -> str:
    cfg = params.pk
    return _models_setting(params) + (
        f" {cfg.hessian_batches} training mini-batches of {cfg.hessian_batch_size} per model and seed, from the "
        f"model's own training images, shifted by up to {params.real.shift} px as in training; the loss is the "
        f"cross-entropy plus {params.real.weight_decay} / 2 x |theta|^2; top {cfg.hessian_top} eigenvalues by "
        f"magnitude and lambda_min, lambda_max per mini-batch; its density with the top {cfg.hessian_deflate} "
        f"eigenpairs by magnitude exact and the rest from {cfg.hessian_density_probes} Rademacher probes (projected off "
        f"them) of {cfg.hessian_density_steps} Lanczos steps each.")


def _pk2_regime(params: Any) -> str:
    return _hessian_regime(params) + (
        f" The small-data ViTs, with a class token and with global average pooling, from pk_train on the "
        f"class-balanced fraction {min(params.pk_train.fractions):g} of the training images (as many optimiser steps "
        "as all the data), their Hessians on those images.")


def _pk8_regime(params: Any) -> str:
    return _hessian_regime(params) + (f" AlterNet from pk_train and train_real's CNN of its shape ({params.real.seeds} "
                                  "seeds each, all the data, the same recipe), the same way.")


def _feature_maps_regime(params: Any) -> str:
    return _models_setting(params) + (" Feature maps: the embedded input and every block's output, class token "
                                      "dropped; blocks that downsample are left out of the checks.")


# PK-5's noise normalisations (vitheory.pk22.noise.NORMALISATIONS): the verdict's, the official attack's; the variant's
NOISE_DECIDES, NOISE_VARIANT = "official", "rms"


def _pk5_regime(params: Any) -> str:
    cfg = params.pk
    size = {"official": f"{cfg.sign_noise_eps} per pixel", "rms": f"root-mean-square {cfg.noise_rms}"}
    return _models_setting(params) + (
        f" Noise bands {list(cfg.frequencies)} (units of pi, radius max(|f_x|, |f_y|), bandwidth {cfg.bandwidth}), "
        f"in normalised pixels. The verdict's noise: {noise.NORMALISATIONS[NOISE_DECIDES]} ({size[NOISE_DECIDES]}); "
        f"the variant's, reported beside: {noise.NORMALISATIONS[NOISE_VARIANT]} ({size[NOISE_VARIANT]}). The official "
        "noise's energy grows with a ring's frequencies: 1 at 0, 31 to 56 at the outer rings of the cluttered digits' "
        "16 x 16 images (more on larger ones); it runs on our "
        "rings (the official mask, cut by int() and half a bin off-centre, holds slightly different frequencies: "
        "none at 0). Equal energy per band compares the models' sensitivity to a frequency, not to a larger "
        "perturbation.")


def _training_samples(root: Path) -> Samples:
    """Units: each seed's (training NLL, training error, test error) per data fraction, one group per model."""
    return grouped_units(read_table(root / artifact("pk_train_runs"), trainings.COLUMNS), "model",
                         lambda rows: {row["fraction"]: (row["train_loss"], row["train_error"], row["test_error"])
                                       for row in rows})


TRAIN_LOSS, TRAIN_ERROR, TEST_ERROR = range(3)  # a unit's entries per fraction


def _mean(samples: Samples, model: str, fraction: float, which: int) -> float:
    return statistics.mean(unit[fraction][which] for unit in samples[model])


def _pk1_statistics(samples: Samples) -> Measured:
    """From all the data to the smallest fraction: how much the training NLL and both errors rise, and
    the share of the test error's rise that is a training error's rise (near 1: the model fails to fit
    the few images it has, as [PK22] says of ViTs; near 0: it fits them and fails on new ones, which
    is overfitting)."""
    smallest = min(samples["vit"][0])
    measured: Measured = {"smallest_fraction": smallest}
    for model in ("vit", "cnn"):
        rise = {which: _mean(samples, model, smallest, index) - _mean(samples, model, 1.0, index)
                for which, index in (("train_loss", TRAIN_LOSS), ("train_error", TRAIN_ERROR),
                                     ("test_error", TEST_ERROR))}
        measured |= {f"{model}_{which}_rise": value for which, value in rise.items()}
        measured |= {f"{model}_{which}_{end}": _mean(samples, model, fraction, index)
                     for end, fraction in (("smallest", smallest), ("full", 1.0))
                     for which, index in (("train_loss", TRAIN_LOSS), ("train_error", TRAIN_ERROR),
                                          ("test_error", TEST_ERROR))}
        measured[f"{model}_train_share_of_test_error_rise"] = (
            rise["train_error"] / rise["test_error"] if rise["test_error"] > 0 else None)
    return measured


def _pk6_statistics(samples: Samples) -> Measured:
    small = sorted(f for f in samples["alternet"][0] if f < 1)
    measured = {f"{model}_test_error_{f:g}": _mean(samples, model, f, TEST_ERROR)
                for model in ("alternet", "cnn") for f in (*small, 1.0)}
    gaps = [measured[f"alternet_test_error_{f:g}"] - measured[f"cnn_test_error_{f:g}"] for f in small]
    return measured | {
        "alternet_minus_cnn_small_data": statistics.mean(gaps),
        "alternet_minus_cnn_all_data": measured["alternet_test_error_1"] - measured["cnn_test_error_1"],
        # neither model at its ceiling where they are compared: at least one point of test error left
        "least_test_error_small_data": min(measured[f"{m}_test_error_{f:g}"] for m in ("alternet", "cnn")
                                           for f in small)}


def _hessian_samples(root: Path) -> Samples:
    """Units: each seed's mini-batches (per mini-batch: its top eigenvalues by magnitude, both ends of its
    spectrum and its density's negative curvature share), one group per model. The seed is the unit:
    its mini-batches share one model, so they are measured inside it, never resampled as if independent."""
    found = grouped_units(read_table(root / table_path("hessian"), hessian.COLUMNS), "model",
                          lambda rows: [_mini_batch(batch) for _, batch in sorted(split(rows, "batch").items())])
    density = read_table(root / table_path("density"), hessian.DENSITY_COLUMNS)
    for model in found:
        # both in (seed, mini-batch) order
        for batch, (nodes, weights) in zip(_batches(found, model), density_units(density, model), strict=True):
            batch["share"] = hessian.negative_curvature_share(nodes, weights)
    return found


def _mini_batch(rows: list[Row]) -> dict[str, Any]:
    """One mini-batch's top eigenvalues by magnitude (in the table's order) and both ends of its spectrum."""
    batch: dict[str, Any] = {"top": []}
    for row in rows:
        if row["which"] == "top":
            batch["top"].append(row["eigenvalue"])
        else:
            batch[row["which"]] = row["eigenvalue"]
    return batch


def _batches(samples: Samples, model: str) -> list[dict[str, Any]]:
    """Every mini-batch of the model's seeds: a mean over them is the mean of the seeds' means (every
    seed has as many mini-batches)."""
    return [batch for seed in samples[model] for batch in seed]


def _negative_curvature(batches: list[dict[str, Any]]) -> float:
    """How far the spectrum reaches below zero against above: mean over mini-batches of
    max(0, -lambda_min) / lambda_max. Free of the top-5 cutoff, which hid the ViT's lambda_min."""
    return statistics.mean(max(0.0, -batch["min"]) / batch["max"] for batch in batches)


# PK-2's comparisons of the negative curvature share, each (model, against) by its quantity's name; the
# figure draws them too. GAP's ViT against the class token's, both on the smallest fraction: [PK22] puts
# GAP's effect 'for small datasets'
SHARE_COMPARISONS = {"vit": ("vit", "cnn"), "small_data": ("vit_small", "vit"), "gap": ("vit_gap", "vit_small")}


def _pk2_statistics(samples: Samples) -> Measured:
    measured = {}
    for model in ("vit", "cnn", "vit_gap", "vit_small"):
        batches = _batches(samples, model)
        eigenvalues = np.array([value for batch in batches for value in batch["top"]])
        positive = eigenvalues[eigenvalues > 0]
        measured |= {f"{model}_nep": float((eigenvalues < 0).mean()),
                     f"{model}_ape": float(positive.mean()) if len(positive) else 0.0,
                     f"{model}_negative_curvature": _negative_curvature(batches),
                     f"{model}_negative_curvature_share": statistics.mean(batch["share"] for batch in batches),
                     f"{model}_lambda_min": statistics.mean(batch["min"] for batch in batches)}
    curvature = {model: measured[f"{model}_negative_curvature"] for model in ("vit", "cnn", "vit_gap", "vit_small")}
    return measured | {"vit_nep_minus_cnn_nep": measured["vit_nep"] - measured["cnn_nep"],
                       # the spectral share decides every comparison: one measure, the nearest to the paper's
                       # "negative eigenvalues"; the ratio is heavy-tailed across seeds (described)
                       **{f"{name}_minus_{against}_negative_curvature": curvature[model] - curvature[against]
                          for name, (model, against) in SHARE_COMPARISONS.items()},
                       **{f"{name}_minus_{against}_negative_curvature_share":
                          measured[f"{model}_negative_curvature_share"] - measured[f"{against}_negative_curvature_share"]
                          for name, (model, against) in SHARE_COMPARISONS.items()}}


def _pk8_statistics(samples: Samples) -> Measured:
    """lambda_max, mean over mini-batches and seeds, of AlterNet against the CNN of its shape trained by
    the same recipe (the official comparison, which decides), and of the ViT against the CNN (described:
    unlike models, a LayerNorm ViT at a higher training loss against a BatchNorm CNN near zero loss, and
    Hessian scale follows both). Ratios on the log scale, where an interval stays on one side of 0."""
    largest = {model: statistics.mean(batch["max"] for batch in _batches(samples, model))
               for model in ("vit", "cnn", "alternet")}
    measured: Measured = {f"{model}_lambda_max": value for model, value in largest.items()}
    for model, against in (("vit", "cnn"), ("alternet", "cnn")):
        ratio = largest[model] / largest[against]
        measured |= {f"{model}_over_{against}_lambda_max": ratio,
                     f"log_{model}_over_{against}_lambda_max": math.log(ratio) if ratio > 0 else None}
    return measured


def _lesion_samples(root: Path) -> Samples:
    """Units: each seed's accuracy drops, branch by branch, one group per model."""
    return grouped_units(read_table(root / table_path("lesion"), lesion.COLUMNS), "model")


def _closing_margins(drops: list[dict], kind: str) -> dict[int, float]:
    """Per stage of one seed whose last block has a branch of `kind`: the accuracy lost by removing that
    branch minus the most lost by removing any branch of an earlier block of the stage."""
    margins = {}
    for stage in sorted({d["stage"] for d in drops}):
        mine = [d for d in drops if d["stage"] == stage]
        last = max(d["position"] for d in mine)
        closing = [d["accuracy_drop"] for d in mine if d["position"] == last and d["kind"] == kind]
        earlier = [d["accuracy_drop"] for d in mine if d["position"] < last]
        if closing and earlier:
            margins[stage] = closing[0] - max(earlier)
    return margins


def _pk7_statistics(samples: Samples) -> Measured:
    """AlterNet's stages that close with attention; the CNN of its shape on the same stages, which close
    with a convolution (the control); the ViT read as one stage closing with its last attention branch:
    the closing branch's drop minus the largest drop of an earlier block, mean over stages and seeds."""
    alternet = [_closing_margins(drops, "msa") for drops in samples["alternet"]]
    closing_with_attention = {stage for margins in alternet for stage in margins}
    end_of_stage = statistics.mean(margin for margins in alternet for margin in margins.values())
    cnn = statistics.mean(margin for drops in samples["cnn"]
                          for stage, margin in _closing_margins(drops, "conv").items() if stage in closing_with_attention)
    return {"end_of_stage_msa_minus_earlier_blocks": end_of_stage,
            "cnn_closing_conv_minus_earlier_blocks": cnn,
            "alternet_minus_cnn_closing_margin": end_of_stage - cnn,
            "vit_last_msa_minus_earlier_blocks": statistics.mean(
                margin for drops in samples["vit"] for margin in _closing_margins(drops, "msa").values()),
            **{f"{model}_{kind}_drop": statistics.mean(d["accuracy_drop"] for unit in samples[model] for d in unit
                                                       if d["kind"] == kind)
               for model, kinds in (("alternet", ("conv", "msa")), ("cnn", ("conv",)), ("vit", ("msa", "mlp")))
               for kind in kinds}}


def _profile_samples(root: Path) -> Samples:
    """Units: each seed's profile (kind, high-frequency delta, variance per feature map), one group per model."""
    return grouped_units(read_table(root / table_path("profiles"), feature_maps.COLUMNS), "model")


def _block_changes(quantity: str) -> Callable[[Samples], Measured]:
    def measure(samples: Samples) -> Measured:
        measured = {}
        for model, kind, sign in (("vit", "msa", -1), ("vit", "mlp", 1), ("cnn", "conv", 1), ("alternet", "msa", -1),
                                  ("alternet", "conv", 1)):
            changes = [change for profile in samples[model] for change in block_changes(profile, quantity)[kind]]
            measured |= {f"{model}_{kind}_change": statistics.mean(changes),
                         # the share of (block, seed) pairs with the claimed sign, not only the mean's
                         f"{model}_{kind}_share_with_claimed_sign": statistics.mean(c * sign > 0 for c in changes)}
        return measured
    return measure


def _noise_samples(normalisation: str) -> Callable[[Path], Samples]:
    """Units: each seed's clean accuracy and accuracy drop per noise frequency, one group per model,
    under one normalisation of the noise (vitheory.pk22.noise.NORMALISATIONS)."""
    def samples(root: Path) -> Samples:
        rows = [row for row in read_table(root / table_path("noise"), noise.COLUMNS)
                if row["normalisation"] == normalisation]
        return grouped_units(rows, "model", lambda seed_rows: {
            row["frequency"]: (row["clean_accuracy"], row["accuracy_drop"]) for row in seed_rows})
    return samples


def _pk5_statistics(samples: Samples) -> Measured:
    """The profile over the non-zero bands: frequency 0 is a uniform brightness shift, not a frequency a
    filter passes or stops (the CNN lost 18.9 points there and at most 3.5 at any other band), and [PK22]
    Fig. 4 compares the models across the bands above it."""
    def drop(model: str, pick: Callable) -> float:
        return statistics.mean(unit[pick(f for f in unit if f > 0)][1] for unit in samples[model])

    measured = {f"{model}_drop_{end}": drop(model, pick) for model in ("vit", "cnn")
                for end, pick in (("highest", max), ("lowest", min))}
    measured |= {f"{model}_drop_dc": statistics.mean(unit[0.0][1] for unit in samples[model] if 0.0 in unit)
                 for model in ("vit", "cnn") if 0.0 in samples[model][0]}
    # each model's profile over frequency: how much more high-frequency noise costs it than low
    for model in ("vit", "cnn"):
        measured[f"{model}_high_minus_low"] = measured[f"{model}_drop_highest"] - measured[f"{model}_drop_lowest"]
    return measured | {
        "vit_minus_cnn_high_minus_low": measured["vit_high_minus_low"] - measured["cnn_high_minus_low"],
        # no model may collapse under the noise: the least accuracy left, over models and the profile's bands
        "least_noisy_accuracy": min(statistics.mean(unit[f][0] - unit[f][1] for unit in samples[model])
                                    for model in ("vit", "cnn") for f in samples[model][0] if f > 0)}


def _stages(profile: list[dict]) -> list[list[dict]]:
    """The profile's stages: runs of consecutive blocks with the same number of tokens (a downsampling block
    opens the next), the stem's embedding left out."""
    found: list[list[dict]] = []
    for row in profile:
        if row["kind"] == "embed":
            continue
        if found and found[-1][-1]["tokens"] == row["tokens"]:
            found[-1].append(row)
        else:
            found.append([row])
    return found


def _stage_ends(profile: list[dict]) -> tuple[float, float | None]:
    """log(variance at a stage's last block / the largest variance of the stage's blocks before it), mean over
    the stages of two blocks or more; and log(variance at the next stage's first block / at the last block),
    mean over stage boundaries (None with one stage): a peak falls after it, a steady rise does not."""
    stages = _stages(profile)
    ends = [math.log(stage[-1]["variance"] / max(row["variance"] for row in stage[:-1]))
            for stage in stages if len(stage) > 1]
    after = [math.log(following[0]["variance"] / stage[-1]["variance"]) for stage, following in zip(stages, stages[1:])]
    return statistics.mean(ends), statistics.mean(after) if after else None


def _pk9_statistics(samples: Samples) -> Measured:
    measured: Measured = {}
    for model in ("alternet", "cnn"):
        ends = [_stage_ends(profile) for profile in samples[model]]
        boundaries = [after for _, after in ends if after is not None]
        measured |= {f"{model}_stage_end_log_variance_over_earlier": statistics.mean(end for end, _ in ends),
                     f"{model}_log_variance_change_into_next_stage": statistics.mean(boundaries) if boundaries else None,
                     f"{model}_stages": len(_stages(samples[model][0]))}
    return measured


def _pk10_regime(params: Any) -> str:
    cfg, real = params.pk_landscape, params.real
    return (f"train_real's natural-image ViT and CNN and pk_train's AlterNet (all the data), {real.seeds} seeds each, "
            f"dataset {dataset_named(params.images)}. One batch of {cfg.n_images} training images, shifted once by up "
            f"to {real.shift} px as in training, at every point; the loss NLL + {real.weight_decay} x (sum over "
            f"parameters of ||p||), the official plot's. Directions as the official code draws them (normalised "
            f"over dim 0, entries of fewer than 2 dimensions and the positional encodings left still); a plane of "
            f"{cfg.plane_points} x {cfg.plane_points} points and {cfg.lines} lines of {cfg.line_points} points over "
            f"[-{cfg.extent:g}, {cfg.extent:g}]; matched loss: {cfg.loss_rise:g} nats above each model's centre; a "
            f"second difference below -{cfg.tolerance:g} counts as negative; the control, the line from each "
            f"checkpoint to itself with its first residual branch's hidden units reversed, {cfg.line_points} points.")


def _landscape_samples(weighted: bool) -> Callable[[Path], Samples]:
    """Units: each seed's slices per model, as arrays of the loss (NLL + weight decay x the sum of the
    parameters' norms, the official plot's; with `weighted` False, the NLL alone): the plane (alpha by beta),
    each line and the permutation line; the stage's settings as a group of one."""
    def samples(root: Path) -> Samples:
        settings = read_json(root / artifact("pk_landscape_metrics"))
        weight = settings["weight_decay"] if weighted else 0.0
        rows = read_table(root / artifact("pk_landscape_table"), landscape.COLUMNS)

        def unit(seed_rows: list[Row]) -> dict[str, Any]:
            return {model: _slices(model_rows, weight) for model, model_rows in split(seed_rows, "model").items()}
        return {"seeds": [unit(seed_rows) for _, seed_rows in sorted(split(rows, "seed").items())],
                SETTINGS_GROUP: [{key: settings[key] for key in ("loss_rise", "tolerance", "extent")}]}
    return samples


def _slices(rows: list[Row], weight: float) -> dict[str, Any]:
    def loss(row: Row) -> float:
        return row["nll"] + weight * row["norms"]

    kinds = split(rows, "slice")
    plane = sorted(kinds[landscape.PLANE], key=lambda row: (row["alpha"], row["beta"]))
    side = round(math.sqrt(len(plane)))
    lines = split(kinds[landscape.LINE], "line")
    return {"plane": np.array([loss(row) for row in plane]).reshape(side, side),
            "lines": [np.array([loss(row) for row in sorted(lines[i], key=lambda row: row["alpha"])])
                      for i in sorted(lines)],
            "t": np.array(sorted(row["alpha"] for row in lines[min(lines)])),
            "permutation": np.array([loss(row) for row in sorted(kinds[landscape.PERMUTATION],
                                                                 key=lambda row: row["alpha"])])}


def plane_negative_share(plane: np.ndarray, rise: float | None, tolerance: float) -> float:
    """The share of (interior point, axis) pairs of the plane whose second difference is below -tolerance,
    over the points where the loss is at most `rise` above the centre's (None: every interior point)."""
    middle = plane[1:-1, 1:-1]
    along_alpha = plane[:-2, 1:-1] - 2 * middle + plane[2:, 1:-1]
    along_beta = plane[1:-1, :-2] - 2 * middle + plane[1:-1, 2:]
    centre = plane[len(plane) // 2, len(plane) // 2]
    inside = np.ones_like(middle, dtype=bool) if rise is None else middle - centre <= rise
    negative = ((along_alpha < -tolerance) & inside).sum() + ((along_beta < -tolerance) & inside).sum()
    return float(negative / (2 * inside.sum()))


def line_negative_share(line: np.ndarray, tolerance: float) -> float:
    """The share of a line's interior points whose second difference is below -tolerance."""
    return float((line[:-2] - 2 * line[1:-1] + line[2:] < -tolerance).mean())


def matched_curvature(line: np.ndarray, t: np.ndarray, rise: float) -> tuple[list[float], int]:
    """On each side of the centre, the distance t* at which the loss first rises by `rise` above the
    centre's (linear between grid points; the slice's end when it never does, censored) and the
    curvature 2 rise / t*^2 of the parabola that rises as much there: (log curvature per side, censored
    sides)."""
    centre = len(line) // 2
    logs, censored = [], 0
    for step in (1, -1):
        rises, reach = line[centre::step] - line[centre], np.abs(t[centre::step])
        above = np.nonzero(rises >= rise)[0]
        if len(above):
            i = above[0]
            distance = reach[i - 1] + (rise - rises[i - 1]) / (rises[i] - rises[i - 1]) * (reach[i] - reach[i - 1])
        else:
            distance, censored = reach[-1], censored + 1
        logs.append(math.log(2 * rise / distance ** 2))
    return logs, censored


def _pk10_statistics(samples: Samples) -> Measured:
    """Per seed and model: the plane's negative second-difference share where it has risen at most the
    matched loss, the lines' mean log curvature at that rise; the models compared seed by seed."""
    settings = samples[SETTINGS_GROUP][0]
    rise, tolerance = settings["loss_rise"], settings["tolerance"]
    per_seed: dict[str, dict[str, list[float]]] = {}
    for unit in samples["seeds"]:
        for model, slices in unit.items():
            curvatures = [matched_curvature(line, slices["t"], rise) for line in slices["lines"]]
            mine = per_seed.setdefault(model, {})
            for name, value in (
                    ("negative_share", plane_negative_share(slices["plane"], rise, tolerance)),
                    ("whole_plane_negative_share", plane_negative_share(slices["plane"], None, tolerance)),
                    ("lines_negative_share", statistics.mean(line_negative_share(line, tolerance)
                                                             for line in slices["lines"])),
                    ("log_curvature", statistics.mean(v for logs, _ in curvatures for v in logs)),
                    ("censored_share", sum(c for _, c in curvatures) / (2 * len(curvatures))),
                    ("centre_loss", float(slices["plane"][len(slices["plane"]) // 2, len(slices["plane"]) // 2])),
                    ("permutation_negative_share", line_negative_share(slices["permutation"], tolerance)),
                    ("permutation_barrier", float(slices["permutation"].max() - slices["permutation"][[0, -1]].max()))):
                mine.setdefault(name, []).append(value)
    measured: Measured = {f"{model}_{name}": statistics.mean(values)
                          for model, quantities in per_seed.items() for name, values in quantities.items()}
    for model in ("vit", "alternet"):
        measured[f"{model}_minus_cnn_negative_share"] = statistics.mean(
            a - b for a, b in zip(per_seed[model]["negative_share"], per_seed["cnn"]["negative_share"], strict=True))
        measured[f"log_{model}_over_cnn_curvature"] = statistics.mean(
            a - b for a, b in zip(per_seed[model]["log_curvature"], per_seed["cnn"]["log_curvature"], strict=True))
    # the control: the permutation line cannot be convex, and every model's must read as not
    measured["least_permutation_negative_share"] = min(
        measured[f"{model}_permutation_negative_share"] for model in per_seed)
    return measured


def _pk11_regime(params: Any) -> str:
    cfg = params.pk_frequency
    return (f"The natural-image ViT and CNN of `train_real` ({params.real.seeds} seeds each), on every test image of "
            f"dataset {dataset_named(params.images)}. Low-pass: the frequencies of radius max(|f_x|, |f_y|) <= the "
            f"cutoff, {list(cfg.cutoffs)} pi (PK-5's rings; frequency 0 in the low-pass), high-pass: the rest; "
            f"cue conflicts: each test image's low-pass plus the high-pass of another of a different class (seed "
            f"{cfg.seed}). The control: train_real's CNN trained by the same recipe for {cfg.control_epochs} epochs "
            f"on training images low-passed at {cfg.control_cutoff:g} pi, one per seed, read at that cutoff.")


def _frequency_samples(root: Path) -> Samples:
    """Units: each seed's rows per model (ViT, CNN, the control) and cutoff; the stage's settings as a group
    of one."""
    settings = read_json(root / artifact("pk_frequency_metrics"))
    rows = read_table(root / artifact("pk_frequency_table"), frequency.COLUMNS)

    def unit(seed_rows: list[Row]) -> dict[str, dict[float, Row]]:
        return {model: {row["cutoff"]: row for row in model_rows}
                for model, model_rows in split(seed_rows, "model").items()}
    return {"seeds": [unit(seed_rows) for _, seed_rows in sorted(split(rows, "seed").items())],
            SETTINGS_GROUP: [{"classes": settings["classes"], "control_cutoff": settings["control_cutoff"]}]}


def cue_quantities(row: Row) -> dict[str, float | None]:
    """One model, seed and cutoff: the share of its clean accuracy kept on low-passed and on high-passed
    images and their difference (how much more it reads from the low frequencies), the share of the cue
    conflicts read as either digit that it reads as the low-pass one, and the share read as either."""
    kept_low, kept_high = row["low_accuracy"] / row["clean_accuracy"], row["high_accuracy"] / row["clean_accuracy"]
    decided = row["low_cue"] + row["high_cue"]
    return {"kept_low": kept_low, "kept_high": kept_high, "low_reliance": kept_low - kept_high,
            "low_cue_share": row["low_cue"] / decided if decided else None, "cue_decided": decided}


def _pk11_statistics(samples: Samples) -> Measured:
    """Each quantity of `cue_quantities`, mean over cutoffs and seeds, per model; the ViT against the CNN
    seed by seed; the control at the cutoff it trained at."""
    settings = samples[SETTINGS_GROUP][0]
    per_seed: dict[str, dict[str, list[float | None]]] = {}
    for unit in samples["seeds"]:
        for model, by_cutoff in unit.items():
            cutoffs = [settings["control_cutoff"]] if model == frequency.CONTROL else sorted(by_cutoff)
            found = [cue_quantities(by_cutoff[c]) for c in cutoffs]
            for name in found[0]:
                values = [f[name] for f in found]
                per_seed.setdefault(model, {}).setdefault(name, []).append(
                    None if None in values else statistics.mean(values))

    def mean(values: list[float | None]) -> float | None:
        return None if None in values else statistics.mean(values)

    measured: Measured = {f"{model}_{name}": mean(values)
                          for model, quantities in per_seed.items() for name, values in quantities.items()}
    for name in ("low_reliance", "low_cue_share"):
        pairs = list(zip(per_seed["vit"][name], per_seed["cnn"][name], strict=True))
        measured[f"vit_minus_cnn_{name}"] = None if any(None in p for p in pairs) else statistics.mean(
            a - b for a, b in pairs)
    # a prediction at chance names either digit of a conflict with probability 2 / classes
    measured["least_cue_decided_over_chance"] = min(
        measured[f"{model}_cue_decided"] for model in frequency.MODELS) / (2 / settings["classes"])
    return measured



def _pk12_regime(params: Any) -> str:
    cfg, vit, pk = params.pk_locality, params.real.models.vit, params.pk
    side = f"{vit.patch} x {vit.patch}"
    return (f"Dataset {dataset_named(params.images)}, patches of {side} pixels. train_real's natural-image ViT "
            f"(global attention) and the same ViT with its attention in k x k windows of its grid of patches, k in "
            f"{list(cfg.windows)} (a patch token attends to the patches of its window and to the class token, "
            f"which attends to every token), trained by the same recipe, {params.real.seeds} seeds each. Test "
            f"accuracy on every test image; the Hessian as PK-2 and PK-8 measure it, on the first "
            f"{cfg.hessian_batches} of pk_analysis's {pk.hessian_batches} training mini-batches of "
            f"{pk.hessian_batch_size} (the global ViT's read there). The control: the {min(cfg.windows)} x "
            f"{min(cfg.windows)} ViT with its windows laid on a fixed random permutation of the grid (seed {cfg.seed}).")


def _locality_samples(root: Path) -> Samples:
    """Units: per seed, each model's test accuracy and, for the global and the windowed ViTs, their Hessian
    mini-batches (pk_analysis's first ones for the global ViT, pk_locality_hessian's for the windows); the
    stages' settings as a group of one."""
    settings = read_json(root / artifact("pk_locality_metrics"))
    batches = read_json(root / artifact("pk_locality_hessian_metrics"))["hessian_batches"]
    accuracy = read_table(root / artifact("pk_locality_table"), locality.COLUMNS)
    spectra = [row for row in read_table(root / table_path("hessian"), hessian.COLUMNS)
               if row["model"] == locality.GLOBAL and row["batch"] < batches]
    spectra += read_table(root / artifact("pk_locality_hessian"), hessian.COLUMNS)
    density = [row for row in read_table(root / table_path("density"), hessian.DENSITY_COLUMNS)
               if row["model"] == locality.GLOBAL and row["batch"] < batches]
    density += read_table(root / artifact("pk_locality_density"), hessian.DENSITY_COLUMNS)
    shares = {key: hessian.negative_curvature_share(np.array([r["eigenvalue"] for r in rows]),
                                                    np.array([r["weight"] for r in rows]))
              for key, rows in _grouped(density, ("model", "seed", "batch")).items()}
    largest = {(r["model"], r["seed"], r["batch"]): r["eigenvalue"] for r in spectra if r["which"] == "max"}

    def unit(seed: int, rows: list[Row]) -> dict[str, Any]:
        mine = {key[0]: [] for key in largest if key[1] == seed}
        for (model, s, batch), value in sorted(largest.items()):
            if s == seed:
                mine[model].append({"max": value, "share": shares[model, s, batch]})
        return {"accuracy": {row["model"]: row["test_accuracy"] for row in rows}, "hessian": mine}
    return {"seeds": [unit(seed, rows) for seed, rows in sorted(split(accuracy, "seed").items())],
            SETTINGS_GROUP: [{"windows": settings["windows"], "control_window": settings["control_window"]}]}


def _grouped(rows: list[Row], keys: tuple[str, ...]) -> dict[tuple, list[Row]]:
    found: dict[tuple, list[Row]] = {}
    for row in rows:
        found.setdefault(tuple(row[key] for key in keys), []).append(row)
    return found


def _pk12_statistics(samples: Samples) -> Measured:
    """Per seed: each window's test accuracy minus the global ViT's; its Hessian's negative curvature share
    minus the global ViT's and log(its lambda_max / the global ViT's), each mean over the mini-batches first;
    the Hessian's pooled over the windows (the claim is about local attention, every window); the control's
    accuracy loss. Means over seeds."""
    settings = samples[SETTINGS_GROUP][0]
    windows = [locality.model_name(w) for w in settings["windows"]]
    control = locality.model_name(settings["control_window"])
    per_seed: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        per_seed.setdefault(name, []).append(value)

    for unit in samples["seeds"]:
        accuracy, curvature = unit["accuracy"], unit["hessian"]
        share = {m: statistics.mean(b["share"] for b in batches) for m, batches in curvature.items()}
        largest = {m: statistics.mean(b["max"] for b in batches) for m, batches in curvature.items()}
        for model in (locality.GLOBAL, *windows):
            add(f"{model}_accuracy", accuracy[model])
            add(f"{model}_negative_curvature_share", share[model])
            add(f"{model}_lambda_max", largest[model])
        for model in windows:
            add(f"{model}_minus_global_accuracy", accuracy[model] - accuracy[locality.GLOBAL])
            add(f"{model}_minus_global_negative_curvature_share", share[model] - share[locality.GLOBAL])
            add(f"log_{model}_over_global_lambda_max", math.log(largest[model] / largest[locality.GLOBAL]))
        add("worst_window_minus_global_accuracy", min(accuracy[m] - accuracy[locality.GLOBAL] for m in windows))
        add("local_minus_global_negative_curvature_share",
            statistics.mean(share[m] for m in windows) - share[locality.GLOBAL])
        add("log_local_over_global_lambda_max",
            statistics.mean(math.log(largest[m] / largest[locality.GLOBAL]) for m in windows))
        add("off_grid_accuracy", accuracy[locality.CONTROL])
        add("window_minus_off_grid_accuracy", accuracy[control] - accuracy[locality.CONTROL])
    return {name: statistics.mean(values) for name, values in per_seed.items()}


def _pk13_regime(params: Any) -> str:
    alternet, cfg = params.pk_train.alternet, params.pk_buildup
    return (f"Dataset {dataset_named(params.images)}, train_real's recipe, {params.real.seeds} seeds per model, all "
            f"the training images. The all-conv model: train_real's CNN (widths {list(alternet.widths)}, blocks "
            f"{list(alternet.blocks)}); AlterNet of the same stages with attention blocks (numbered over the network "
            f"from 0) at {buildup.official_placement(alternet)} (pk_train's, the official placement: closing the "
            f"stages after the first), at {list(cfg.stage_start)} (the same blocks at the start of their stages) and "
            f"at {list(cfg.model_end)} (the model's end); none in the first stage (the official rule's, and an "
            "attention block on its full-resolution map was too costly to train). The control: pk_train's AlterNet "
            "with its closing attention block removed (PK-7's lesion), not retrained.")


def _buildup_samples(root: Path) -> Samples:
    """Units: per seed, each placement's test accuracy."""
    rows = read_table(root / artifact("pk_buildup_table"), buildup.COLUMNS)
    return {"seeds": [{row["model"]: row["test_accuracy"] for row in seed_rows}
                      for _, seed_rows in sorted(split(rows, "seed").items())]}


def _pk13_statistics(samples: Samples) -> Measured:
    """Per seed, the official placement's test accuracy minus each other's (the rule's steps and the
    alternatives), mean over seeds; each placement's mean accuracy."""
    units = samples["seeds"]
    official = buildup.STAGE_END
    models = (buildup.ALL_CONV, official, *buildup.PLACEMENTS, buildup.CONTROL)
    measured: Measured = {f"{model}_accuracy": statistics.mean(unit[model] for unit in units) for model in models}
    for other in (buildup.ALL_CONV, *buildup.PLACEMENTS, buildup.CONTROL):
        measured[f"stage_end_minus_{other}_accuracy"] = statistics.mean(unit[official] - unit[other] for unit in units)
    return measured

PAPER = Paper(
    key="PK22",
    citation="Park, Kim. How Do Vision Transformers Work? ICLR 2022, arXiv 2202.06709.",
    claims=(
        Claim(
            id="PK-1",
            data=REAL,
            seeds=("real.seeds",),
            statement=("ViTs' poor accuracy on small data is not overfitting: as the training set shrinks, their "
                       "training NLL and test error move together."),
            metric=("from all the training images to the smallest class-balanced fraction (every fraction trained "
                    "for as many optimiser steps as all the data), the rise of the ViT's mean training NLL and test "
                    "error over seeds, and the share of its test error's rise that its training error rises too; "
                    "the CNN's beside it, described"),
            criteria=(Criterion("vit_train_loss_rise", ">", 0.0,
                                ("paper: [PK22] small-data study (seed summary; docs/SCIENCE.md): with fewer images the "
                                 "training NLL changes with the test error, no overfitting; the sign"), MEAN),
                      Criterion("vit_test_error_rise", ">", 0.0,
                                ("paper: [PK22] small-data study: ViTs 'perform poorly on a small amount of data'; "
                                 "the sign, without which there is nothing to explain"), MEAN, bounds=(-1.0, 1.0)),
                      Criterion("vit_train_share_of_test_error_rise", ">=", 0.5,
                                ("ours: 'not overfitting' read as: at least half of the test error lost with the "
                                 "data is lost on the training images too (an overfitting model: near 0)"), MEAN)),
            evidence=(figure_path(figures.SMALL_DATA), artifact("pk_train_runs")),
            samples=_training_samples,
            statistics=_pk1_statistics,
            regime=_trainings_setting,
        ),
        Claim(
            id="PK-2",
            data=REAL,
            seeds=("real.seeds",),
            statement=("ViTs have many negative Hessian eigenvalues, CNNs few; more data suppresses them, and on "
                       "small data global average pooling does."),
            metric=("the Hessian of the training NLL + L2 on augmented mini-batches of each model's own training "
                    "images (Lanczos on Hessian-vector products): max(0, -lambda_min) / lambda_max per mini-batch, "
                    "mean over mini-batches and seeds, for the ViT, the CNN, the ViT on the smallest data fraction "
                    "and the ViT with global average pooling on that fraction (against the class-token ViT there: "
                    "[PK22] says GAP suppresses them 'for small datasets'); the whole spectrum's share of squared curvature in "
                    "negative directions, tr(H_-^2) / tr(H^2), from its density (the top eigenpairs exact, the "
                    "rest by stochastic Lanczos quadrature on several probes); "
                    "beside them the official NEP (share of negative among the top eigenvalues by magnitude), "
                    "which rests on a handful of eigenvalues"),
            criteria=(Criterion("vit_minus_cnn_negative_curvature_share", ">", 0.0,
                                ("paper: [PK22] Hessian spectra (seed summary): 'ViT has a large number of negative "
                                 "eigenvalues ... while ResNet does not'; the sign"), MEAN, bounds=(-1.0, 1.0)),
                      Criterion("small_data_minus_vit_negative_curvature_share", ">", 0.0,
                                ("paper: [PK22] Hessian spectra (seed summary): a 'large dataset suppress negative "
                                 "eigenvalues'; the sign"), MEAN, bounds=(-1.0, 1.0)),
                      Criterion("gap_minus_vit_small_negative_curvature_share", "<", 0.0,
                                ("paper: [PK22] (seed summary): 'for small datasets' GAP 'suppressed the negative "
                                 "eigenvalues'; the sign, both ViTs on the smallest fraction"),
                                MEAN, bounds=(-1.0, 1.0))),
            evidence=(figure_path(figures.HESSIAN), table_path("hessian"), table_path("density")),
            samples=_hessian_samples,
            statistics=_pk2_statistics,
            regime=_pk2_regime,
        ),
        Claim(
            id="PK-3",
            data=REAL,
            seeds=("real.seeds",),
            statement=("Attention blocks are low-pass filters and convolutions high-pass: across a block, the "
                       "high-frequency log amplitude of the feature maps falls for attention and rises for conv/MLP "
                       "blocks."),
            metric=("mean over blocks of each kind and over seeds of the change, across the block, of the log "
                    "amplitude at the end of the official half-diagonal, (1 - 2/h) pi, minus that at frequency 0; "
                    "blocks that downsample are left out; also the share of blocks and seeds with the claimed sign"),
            criteria=(Criterion("vit_msa_change", "<", 0.0,
                                ("paper: [PK22] Fourier analysis (seed summary): 'MSAs reduce high-frequency "
                                 "signals (acting as low-pass filters)'; the sign"), PAIRED, group="vit"),
                      Criterion("vit_mlp_change", ">", 0.0,
                                ("paper: [PK22] Fourier analysis (as docs/SCIENCE.md reads it): the high-frequency "
                                 "amplitude rises across MLP blocks; the sign"), PAIRED, group="vit"),
                      Criterion("cnn_conv_change", ">", 0.0,
                                ("paper: [PK22] Fourier analysis (seed summary): Convs 'amplify them (acting as "
                                 "high-pass filters)'; the sign"), PAIRED, group="cnn"),
                      Criterion("alternet_msa_change", "<", 0.0,
                                ("paper: [PK22] Figs. 8-9 (as the review reads them): AlterNet's MSA blocks, closing "
                                 "each stage, reduce the high-frequency amplitude; the sign"), PAIRED, group="alternet")),
            evidence=(figure_path(figures.FEATURES), table_path("profiles")),
            samples=_profile_samples,
            statistics=_block_changes("high_frequency"),
            regime=_feature_maps_regime,
        ),
        Claim(
            id="PK-4",
            data=REAL,
            seeds=("real.seeds",),
            statement="Attention blocks reduce the spatial variance of the feature maps; conv and MLP blocks raise it.",
            metric=("mean over blocks of each kind and over seeds of the change of the spatial variance across the "
                    "block, blocks that downsample left out; also the share of blocks and seeds with the claimed sign"),
            criteria=(Criterion("vit_msa_change", "<", 0.0,
                                ("paper: [PK22] (seed summary): 'MSAs aggregate feature maps by reducing "
                                 "variance'; the sign"), PAIRED, group="vit"),
                      Criterion("vit_mlp_change", ">", 0.0,
                                ("paper: [PK22] feature-map variance (as docs/SCIENCE.md reads it): MLP blocks raise "
                                 "it; the sign"), PAIRED, group="vit"),
                      Criterion("cnn_conv_change", ">", 0.0,
                                ("paper: [PK22] feature-map variance (as docs/SCIENCE.md reads it): conv blocks raise "
                                 "it (seed: MSAs reduce it 'while Convs do not'); the sign"), PAIRED, group="cnn"),
                      Criterion("alternet_msa_change", "<", 0.0,
                                ("paper: [PK22] Figs. 8-9 (as the review reads them): AlterNet's MSA blocks, closing "
                                 "each stage, reduce the feature maps' variance; the sign"), PAIRED, group="alternet")),
            evidence=(figure_path(figures.FEATURES), table_path("profiles")),
            samples=_profile_samples,
            statistics=_block_changes("variance"),
            regime=_feature_maps_regime,
        ),
        Claim(
            id="PK-5",
            data=REAL,
            seeds=("real.seeds",),
            statement=("ViTs are robust to high-frequency noise and fragile to low-frequency noise; CNNs the "
                       "other way round."),
            metric=("each model's accuracy drop under noise band-passed at the highest frequency minus its drop "
                    "at the lowest non-zero one (its profile over frequency; the models' clean accuracies differ; "
                    "frequency 0, a uniform brightness shift, described beside it), mean over seeds; the ViT's "
                    f"profile against the CNN's; decided under {noise.NORMALISATIONS[NOISE_DECIDES]}; beside it, under "
                    f"{noise.NORMALISATIONS[NOISE_VARIANT]}"),
            criteria=(Criterion("vit_minus_cnn_high_minus_low", "<", 0.0,
                                ("paper: [PK22] (as docs/SCIENCE.md reads it): ViTs robust to high-, fragile to "
                                 "low-frequency noise, CNNs the opposite; the sign"), MEAN, bounds=(-1.0, 1.0)),),
            conditions=(Criterion("least_noisy_accuracy", ">=", 0.5,
                                  ("ours: no model may collapse under the noise (50% accuracy left at every band), "
                                   "so the drops compare working models"), MEAN, bounds=(0.0, 1.0)),),
            evidence=(figure_path(figures.NOISE), table_path("noise")),
            samples=_noise_samples(NOISE_DECIDES),
            statistics=_pk5_statistics,
            variants=(Variant("noise of equal rms in every band (ours: the drops compare bands at equal energy)",
                              _noise_samples(NOISE_VARIANT)),),
            regime=_pk5_regime,
        ),
        Claim(
            id="PK-6",
            data=REAL,
            seeds=("real.seeds",),
            statement=("Replacing conv blocks at the end of a stage by attention blocks (AlterNet: none in the first "
                       "stage, at the end of later ones) beats the pure CNN, also on small data."),
            metric=("mean test error over seeds of AlterNet and of the CNN of the same shape, all conv blocks, on "
                    "the small class-balanced fractions of the training images (trained for as many steps as all "
                    "the data), mean over fractions; the gap on all the data beside it"),
            criteria=(Criterion("alternet_minus_cnn_small_data", "<", 0.0,
                                ("paper: [PK22] (seed summary): AlterNet 'outperformed CNNs not only on large "
                                 "datasets but also on small datasets'; the sign"), MEAN, bounds=(-1.0, 1.0)),),
            conditions=(Criterion("least_test_error_small_data", ">=", 0.01,
                                  ("ours: neither model at its ceiling on small data (at least 1 point of test error "
                                   "left), or no difference can show"), MEAN, bounds=(0.0, 1.0)),),
            evidence=(figure_path(figures.SMALL_DATA), artifact("pk_train_runs")),
            samples=_training_samples,
            statistics=_pk6_statistics,
            regime=_trainings_setting,
        ),
        Claim(
            id="PK-7",
            data=REAL,
            seeds=("real.seeds",),
            statement=("In a multi-stage model, the attention blocks at the end of a stage matter most: removing one "
                       "costs more accuracy than removing a block before it in that stage."),
            metric=("AlterNet trained on all the data, one block at a time replaced by the identity on its "
                    "residual branch (an attention block's attention and MLP together; downsampling blocks have "
                    "no identity path and are left out): the test accuracy lost by removing the stage's closing "
                    "attention block minus the most lost by removing an earlier block of the stage, mean over "
                    "stages and seeds; against the control, the same margin of the CNN of AlterNet's shape on the "
                    "same stages, which close with a convolution (the difference of the two means); described beside it, not tested: the same for the ViT, one branch at a time, its last "
                    "attention branch against every branch of the blocks before it (the paper contrasts the end of "
                    "a stage with the end of a model, so the ViT's single stage cannot test it)"),
            criteria=(Criterion("end_of_stage_msa_minus_earlier_blocks", ">", 0.0,
                                ("paper: [PK22] lesion study (as docs/SCIENCE.md reads it): MSAs at the end of a stage "
                                 "matter most; the sign"), PAIRED, group="alternet"),
                      Criterion("alternet_minus_cnn_closing_margin", ">", 0.0,
                                ("ours: the paper credits the margin to attention at a stage's end, so a "
                                 "stage's closing convolution in the CNN of the same shape must stand out less, or the "
                                 "margin belongs to the last block of a stage; the sign"), MEAN),),
            evidence=(figure_path(figures.LESION), table_path("lesion")),
            samples=_lesion_samples,
            statistics=_pk7_statistics,
            regime=_trainings_setting,
        ),
        Claim(
            id="PK-8",
            data=REAL,
            seeds=("real.seeds",),
            statement=("MSAs flatten the loss landscape: a model with MSAs has smaller Hessian eigenvalues than a "
                       "CNN trained the same way."),
            metric=("lambda_max of the Hessian of the training NLL + L2 (as PK-2), mean over mini-batches and "
                    "seeds, AlterNet over the CNN of its shape trained by the same recipe, on the log scale (log "
                    "ratio < 0: ratio < 1): our pair, which decides, since the two differ only in the MSAs. The "
                    "paper's own pair, a ViT against a ResNet, is described beside it (`log_vit_over_cnn_lambda_max`, "
                    "our ViT over our CNN), not decided: here they are unlike models at unlike training losses (a "
                    "LayerNorm ViT well above a BatchNorm CNN near zero loss), and a Hessian's scale follows both"),
            criteria=(Criterion("log_alternet_over_cnn_lambda_max", "<", 0.0,
                                ("ours: [PK22] (Hessian spectra, seed summary) compares a ViT with a ResNet: with "
                                 "MSAs 'the magnitude of positive eigenvalues is lower'; the direction is the paper's, "
                                 "the pair is ours, AlterNet against the CNN of its shape (alike but for the MSAs); "
                                 "the sign"), MEAN),),
            evidence=(figure_path(figures.HESSIAN), table_path("hessian"), table_path("density")),
            samples=_hessian_samples,
            statistics=_pk8_statistics,
            regime=_pk8_regime,
        ),
        Claim(
            id="PK-9",
            data=REAL,
            seeds=("real.seeds",),
            statement=("ResNet's feature-map variance peaks at the end of each stage: it rises across the stage's "
                       "blocks to its last one and falls into the next stage (the CNN of AlterNet's shape stands in "
                       "for ResNet). AlterNet's profile is described, not decided: [PK22] places its attention "
                       "blocks at a stage's end because they reduce the variance (PK-4), so it predicts no peak there."),
            metric=("per seed, on the CNN of AlterNet's shape: log(feature-map variance at each stage's last block / "
                    "the largest at the stage's earlier blocks), mean over the stages of two blocks or more (the rise "
                    "to the peak), and log(variance at the next stage's first block / at a stage's last block), mean "
                    "over stage boundaries (the fall after it); a stage: consecutive blocks with the same tokens, the "
                    "stem left out; a steady rise passes the first and fails the second. Described: AlterNet's same "
                    "two numbers"),
            criteria=(Criterion("cnn_stage_end_log_variance_over_earlier", ">", 0.0,
                                ("paper: [PK22] (seed summary): 'ResNet's variance has its peak at the end of each "
                                 "stage'; the rise to the peak, the sign per seed, on the CNN, our ResNet's "
                                 "stand-in"), PAIRED, group="cnn"),
                      Criterion("cnn_log_variance_change_into_next_stage", "<", 0.0,
                                ("paper: [PK22] (seed summary): 'ResNet's variance has its peak at the end of each "
                                 "stage'; the fall after the peak into the next stage, the sign per seed, on the "
                                 "CNN"), PAIRED, group="cnn")),
            evidence=(figure_path(figures.FEATURES), table_path("profiles")),
            samples=_profile_samples,
            statistics=_pk9_statistics,
            regime=_feature_maps_regime,
        ),
        Claim(
            id="PK-10",
            data=REAL,
            seeds=("real.seeds",),
            statement=("The loss landscape (Fig. 1): the ViT's is non-convex where the CNN's is near convex, and MSAs "
                       "flatten it: at a matched rise of the loss, the ViT's and AlterNet's landscapes curve less "
                       "than the CNN's."),
            metric=("filter-normalised slices (the official code's directions) around every checkpoint, forward "
                    "passes only, of the training loss NLL + weight decay x sum of the parameters' norms (the "
                    "official plot's): on the 2-D plane, the share of (point, axis) pairs with a negative second "
                    "difference among the points at most the matched loss above the centre; on the lines, the "
                    "curvature 2 rise / t*^2 at the distance t* where the loss first rises by the matched loss "
                    "(each side; a side that never does counts at the slice's end), mean log over sides and lines; "
                    "per seed, the ViT against the CNN and AlterNet against the CNN of its shape; described: "
                    "AlterNet's share, every model's share over the whole plane and along the lines, its centre "
                    "loss and censored sides; the variant reads the NLL alone"),
            criteria=(Criterion("vit_minus_cnn_negative_share", ">", 0.0,
                                ("paper: [PK22] Fig. 1 (seed summary: 'the weak inductive bias leads to a non-convex "
                                 "loss function ... while the one of ResNet is strongly convex'); the sign, seed by "
                                 "seed"), PAIRED, group="seeds"),
                      Criterion("log_vit_over_cnn_curvature", "<", 0.0,
                                ("paper: [PK22] Fig. 1, loss landscape visualisations (seed summary: MSAs help 'by "
                                 "... flattening the loss landscape'); the sign, at a matched rise of the loss, seed "
                                 "by seed"), PAIRED, group="seeds"),
                      Criterion("log_alternet_over_cnn_curvature", "<", 0.0,
                                ("ours: the paper's direction (MSAs flatten the landscape) on the pair alike but for "
                                 "the MSAs, AlterNet against the CNN of its shape, as PK-8; the sign, seed by seed"),
                                PAIRED, group="seeds")),
            conditions=(Criterion("least_permutation_negative_share", ">", 0.0,
                                  ("ours: the positive control: the line from a checkpoint to the same function with "
                                   "its hidden units reversed has equal loss at both ends and more between, so it is "
                                   "not convex; the count must find a negative second difference on it, for every "
                                   "model"), MEAN, bounds=(0.0, 1.0)),),
            evidence=(figure_path(figures.LANDSCAPE), artifact("pk_landscape_table")),
            samples=_landscape_samples(weighted=True),
            statistics=_pk10_statistics,
            variants=(Variant("the NLL alone, without the official plot's norm term (ours: the term adds convexity)",
                              _landscape_samples(weighted=False)),),
            regime=_pk10_regime,
        ),
        Claim(
            id="PK-11",
            data=REAL,
            seeds=("real.seeds",),
            statement=("Low frequencies inform MSAs, high frequencies convolutions: the ViT reads its labels more from "
                       "an image's low frequencies than the CNN does, and in a cue conflict it follows the low-pass "
                       "image more often. Unlike PK-5, which adds noise in one band (what a model is sensitive to), "
                       "this takes bands away and sets them against each other (what it reads its label from)."),
            metric=("per model and seed, mean over the cutoffs: the share of its clean test accuracy kept on "
                    "low-passed images minus that kept on high-passed ones, and, on cue conflicts (low-pass of one "
                    "test image plus high-pass of another of a different class), the share read as the low-pass "
                    "image's class among those read as either class; the ViT minus the CNN seed by seed; the control, the CNN "
                    "trained on low-passed images, at its own cutoff"),
            criteria=(Criterion("vit_minus_cnn_low_reliance", ">", 0.0,
                                ("paper: [PK22] (seed summary): 'low-frequency signals and high-frequency signals are "
                                 "informative to MSAs and Convs, respectively'; the sign, seed by seed"),
                                PAIRED, group="seeds"),
                      Criterion("vit_minus_cnn_low_cue_share", ">", 0.0,
                                ("paper: [PK22] (seed summary): low frequencies are the shape, high the texture, and "
                                 "'MSAs are shape-biased, whereas Convs are texture-biased'; the sign, seed by seed"),
                                PAIRED, group="seeds")),
            conditions=(Criterion("control_low_cue_share", ">", 0.5,
                                  ("ours: the positive control: a CNN trained on low-passed images has only the low "
                                   "cue to learn, and must follow it in most conflicts it reads as either image's class"),
                                  MEAN, bounds=(0.0, 1.0)),
                        Criterion("least_cue_decided_over_chance", ">=", 2.0,
                                  ("ours: both models read at least twice as many conflicts as either image's class as "
                                   "predictions at chance would (2 / classes), or the conflict says nothing"), MEAN)),
            evidence=(figure_path(figures.FREQUENCY), artifact("pk_frequency_table")),
            samples=_frequency_samples,
            statistics=_pk11_statistics,
            regime=_pk11_regime,
        ),
        Claim(
            id="PK-12",
            data=REAL,
            seeds=("real.seeds",),
            statement=("Data specificity, not long-range dependency (Sec. 2): local attention, masked to k x k "
                       "windows of the grid of patches, matches or beats global attention in test accuracy, and "
                       "flattens the loss landscape: fewer negative and smaller positive Hessian eigenvalues."),
            metric=("per seed: the least over the windows of a window's ViT's test accuracy minus the global "
                    "ViT's (train_real's); PK-2's "
                    "negative curvature share tr(H_-^2) / tr(H^2) and PK-8's lambda_max of the Hessian of NLL + L2, "
                    "mean over the same training mini-batches, each window's against the global ViT's (a "
                    "difference of shares, a log ratio of lambda_max), mean over the windows; means over seeds. "
                    "Described: each window's own Hessian comparisons; the control, the smallest window's ViT "
                    "read with its windows laid off its neighbours"),
            criteria=(Criterion("worst_window_minus_global_accuracy", ">", -0.01,
                                ("ours: [PK22] Sec. 2 finds local attention better ('data specificity, not "
                                 "long-range dependency', the abstract); 'matches or beats' read as every window at "
                                 "most 1 point of test accuracy below the global ViT (7 of 718 test images), seed by "
                                 "seed"), PAIRED, group="seeds"),
                      Criterion("local_minus_global_negative_curvature_share", "<", 0.0,
                                ("paper: [PK22] Sec. 2 (abstract: MSAs improve 'by flattening the loss landscapes', "
                                 "'primarily attributable to their data specificity'); local attention suppresses "
                                 "negative Hessian eigenvalues: the sign, seed by seed"), PAIRED, group="seeds"),
                      Criterion("log_local_over_global_lambda_max", "<", 0.0,
                                ("paper: [PK22] Sec. 2: local attention reduces the magnitude of the Hessian's "
                                 "eigenvalues (a flatter landscape); the sign of the log ratio, seed by seed"),
                                PAIRED, group="seeds")),
            conditions=(Criterion("window_minus_off_grid_accuracy", ">", 0.0,
                                  ("ours: the positive control: a ViT trained to read neighbourhoods must read "
                                   "worse with its windows laid off them (as many tokens each), or the accuracy "
                                   "comparison cannot see locality; the sign, seed by seed"), PAIRED, group="seeds"),),
            evidence=(figure_path(figures.LOCALITY), artifact("pk_locality_table"), artifact("pk_locality_hessian"),
                      artifact("pk_locality_density")),
            samples=_locality_samples,
            statistics=_pk12_statistics,
            regime=_pk12_regime,
        ),
        Claim(
            id="PK-13",
            data=REAL,
            seeds=("real.seeds",),
            statement=("The build-up rule (Sec. 4): replacing convolutions by attention from the end of the network "
                       "places attention blocks at the end of a stage, and there they beat the same blocks at the "
                       "start of their stage and attention only at the end of the model."),
            metric=("per seed, the test accuracy of AlterNet with the official placement (attention closing the "
                    "stages after the first) minus that of the same network with those attention blocks at the "
                    "start of their stages, and minus that of the network whose last stage is all attention after "
                    "its downsampling block (the model's end); means over seeds. Described: the rule's first step, "
                    "the official placement against the all-conv CNN; the control, the official AlterNet without its "
                    "closing attention block"),
            criteria=(Criterion("stage_end_minus_stage_start_accuracy", ">", 0.0,
                                ("paper: [PK22] Sec. 4 (the official README: 'MSAs at the end of a stage (not a "
                                 "model) significantly improve the accuracy'; the rule replaces convolutions from a "
                                 "stage's end); the sign, seed by seed"), PAIRED, group="seeds"),
                      Criterion("stage_end_minus_model_end_accuracy", ">", 0.0,
                                ("paper: [PK22] Sec. 4 (seed summary: 'an MSA module at the end of each stage, and "
                                 "not at the end of the model as the popular belief'); the sign, seed by seed"),
                                PAIRED, group="seeds")),
            conditions=(Criterion("stage_end_minus_lesioned_accuracy", ">", 0.0,
                                  ("ours: the positive control: the official AlterNet without the attention block it "
                                   "trained with is a placement known to be worse; the comparison must find it worse, "
                                   "seed by seed"), PAIRED, group="seeds"),),
            evidence=(figure_path(figures.BUILDUP), artifact("pk_buildup_table")),
            samples=_buildup_samples,
            statistics=_pk13_statistics,
            regime=_pk13_regime,
        ),
    ),
)
