"""[PK22] figures: feature maps block by block (PK-3, PK-4), band-passed noise (PK-5), the Hessian
spectrum (PK-2), small data and AlterNet (PK-1, PK-6), the loss landscape (PK-10), filtered images and cue
conflicts (PK-11), local attention (PK-12) and the placements of the build-up rule (PK-13)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from vitheory.core.artifacts import read_json
from vitheory.core.figures import model_colour, model_palette, read_frame, save_figure
from vitheory.core.paths import artifact
from vitheory.pk22 import buildup, frequency, hessian, landscape, locality, trainings
from vitheory.pk22.tables import TABLES, table_path

FEATURES, NOISE, HESSIAN, SMALL_DATA, LESION = "pk_features", "pk_noise", "pk_hessian", "pk_small_data", "pk_lesion"
LANDSCAPE, FREQUENCY, LOCALITY, BUILDUP = "pk_landscape", "pk_frequency", "pk_locality", "pk_buildup"


PK_MODELS = {"vit": "ViT", "cnn": "CNN", "alternet": "AlterNet",
             "vit_gap": "ViT, average pooling, smallest data fraction", "vit_small": "ViT, smallest data fraction"}
PK_PALETTE = model_palette(PK_MODELS)  # keyed by label: the tables below are drawn with labels as their models


def pk_features_figure(profiles: pd.DataFrame) -> plt.Figure:
    """[PK22] Figs. 2-3 style: high-frequency log amplitude (minus frequency 0) and spatial variance of
    every feature map against normalised depth, mean over seeds; the ViT's attention blocks shaded, and
    every block that downsamples (its map has fewer tokens than its input's; left out of the checks)
    marked with a cross."""
    table = profiles.assign(model=profiles.model.map(PK_MODELS))
    previous = profiles.groupby(["model", "seed"]).tokens.shift()
    downsampling = table[previous.notna() & (profiles.tokens < previous)]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.0), layout="constrained")
    for ax, quantity, label in ((axes[0], "high_frequency", "Δ log amplitude at (1 - 2/h)π"),
                                (axes[1], "variance", "feature-map variance")):
        sns.lineplot(data=table, x="depth", y=quantity, hue="model", palette=PK_PALETTE, marker="o",
                     errorbar=("pi", 100), ax=ax)
        ax.scatter(downsampling.depth, downsampling[quantity], marker="x", s=60, color="black", zorder=3,
                   label="downsamples (not checked)")
        for depth in sorted(set(profiles[(profiles.model == "vit") & (profiles.kind == "msa")].depth)):
            ax.axvspan(depth - 0.04, depth + 0.04, color="grey", alpha=0.2, lw=0)
        ax.set(xlabel="normalised depth", ylabel=label)
        ax.legend(fontsize="small")
    axes[1].set_yscale("log")
    fig.suptitle("Feature maps block by block (grey: the ViT's attention blocks; band: seeds)", fontsize="small")
    return fig


NOISE_NORMALISATIONS = {"rms": "equal rms per band", "official": "official sign noise"}


def pk_noise_figure(noise: pd.DataFrame, decides: str) -> plt.Figure:
    """[PK22] Fig. 4 style: accuracy drop under noise band-passed at each frequency, one panel per
    normalisation of the noise; the panel of the one PK-5 decides on (`decides`) first, marked."""
    titles = {name: title + (" (verdict)" if name == decides else "") for name, title in NOISE_NORMALISATIONS.items()}
    order = sorted(dict.fromkeys(noise.normalisation), key=lambda name: name != decides)
    grid = sns.relplot(data=noise.assign(model=noise.model.map(PK_MODELS), normalisation=noise.normalisation.map(titles)),
                       x="frequency", y="accuracy_drop", hue="model", palette=PK_PALETTE, col="normalisation",
                       col_order=[titles[name] for name in order], kind="line", marker="o", errorbar=("pi", 100),
                       height=3.6, aspect=1.0, facet_kws={"sharey": False})
    grid.set_axis_labels("noise frequency (units of π)", "test accuracy drop")
    grid.set_titles("{col_name}")
    grid.figure.suptitle("Band-passed noise", y=1.02)
    return grid.figure


def spectral_density(density: pd.DataFrame, grid: np.ndarray, width: float) -> np.ndarray:
    """PyHessian's density: each node a Gaussian of standard deviation `width` and mass its weight, the
    mean over (seed, mini-batch) units, evaluated on `grid`."""
    bumps = np.exp(-0.5 * ((grid[None, :] - density.eigenvalue.to_numpy()[:, None]) / width) ** 2)
    mass = density.weight.to_numpy()[:, None] * bumps / (width * np.sqrt(2 * np.pi))
    return mass.sum(axis=0) / density.groupby(["seed", "batch"]).ngroups


def negative_curvature_shares(density: pd.DataFrame) -> pd.DataFrame:
    """Each model's and seed's tr(H_-^2) / tr(H^2), the mean over its mini-batches' densities (PK-2's
    deciding number, vitheory.pk22.hessian.negative_curvature_share)."""
    units = density.groupby(["model", "seed", "batch"], sort=False)
    shares = units.apply(lambda unit: hessian.negative_curvature_share(unit.eigenvalue.to_numpy(),
                                                                       unit.weight.to_numpy()), include_groups=False)
    return shares.groupby(["model", "seed"], sort=False).mean().rename("share").reset_index()


def _share_panel(ax: plt.Axes, density: pd.DataFrame, comparisons: Sequence[tuple[str, str]]) -> None:
    """PK-2's deciding number per model: each seed a dot, the mean a bar; PK-2's comparisons of the means
    under the axis."""
    shares = negative_curvature_shares(density)
    models = list(dict.fromkeys(shares.model))
    means = shares.groupby("model").share.mean()
    for place, model in enumerate(models):
        mine = shares[shares.model == model].share
        ax.scatter([place] * len(mine), mine, color=model_colour(model), s=18, zorder=3)
        ax.hlines(means[model], place - 0.3, place + 0.3, color=model_colour(model), lw=2.5)
    ax.set_xticks(range(len(models)), [PK_MODELS[model] for model in models], rotation=20, ha="right",
                  fontsize="small")
    differences = [f"{PK_MODELS[model]} − {PK_MODELS[against]}: {means[model] - means[against]:+.3g}"
                   for model, against in comparisons if model in means and against in means]
    ax.set(ylabel="tr(H₋²) / tr(H²)", title="Negative curvature share (PK-2 decides on it)")
    ax.set_xlabel("PK-2, difference of the means:\n" + "\n".join(differences), fontsize="small")


def pk_hessian_figure(hessian_table: pd.DataFrame, density: pd.DataFrame,
                      comparisons: Sequence[tuple[str, str]]) -> plt.Figure:
    """[PK22] Fig. 1 style: the pooled top eigenvalues of the training-loss Hessian per model, both ends
    of each mini-batch's spectrum (lambda_min against lambda_max), the spectral density by stochastic
    Lanczos quadrature, and the share of squared curvature in negative directions that PK-2 decides on,
    with its `comparisons` ((model, against) pairs); one legend for every panel, outside them."""
    fig, axes = plt.subplots(2, 2, figsize=(14, 9), layout="constrained")
    (histograms, ends_ax), (density_ax, share_ax) = axes
    top = hessian_table[hessian_table.which == "top"]
    for model in dict.fromkeys(top.model):
        label, values = PK_MODELS[model], top[top.model == model].eigenvalue
        nep, ape = (values < 0).mean(), values[values > 0].mean()
        sns.histplot(values, bins=30, stat="density", element="step", fill=False, color=model_colour(model),
                     ax=histograms, label=f"{label}: NEP {nep:.2f}, APE {ape:.3g}")
    histograms.axvline(0, color="grey", lw=1)
    histograms.set(xlabel="Hessian eigenvalue (largest magnitudes, pooled over mini-batches and seeds)",
                   title="Top eigenvalues of the training NLL + L2")
    ends = hessian_table[hessian_table.which != "top"].pivot_table(index=["model", "seed", "batch"], columns="which",
                                                                   values="eigenvalue").reset_index()
    sns.scatterplot(data=ends.assign(model=ends.model.map(PK_MODELS)), x="max", y="min", hue="model",
                    palette=PK_PALETTE, legend=False, ax=ends_ax)
    ends_ax.axhline(0, color="grey", lw=1)
    ends_ax.set(xscale="log", xlabel="lambda_max", ylabel="lambda_min",
                title="Both ends of the spectrum, one dot per mini-batch and seed")
    low, high = density.eigenvalue.min(), density.eigenvalue.max()
    grid = np.linspace(low - 0.05 * (high - low), high + 0.05 * (high - low), 4000)
    curves = {model: spectral_density(density[density.model == model], grid, (high - low) / 1000)
              for model in dict.fromkeys(density.model)}
    for model, curve in curves.items():
        density_ax.plot(grid, curve, color=model_colour(model))
    density_ax.axvline(0, color="grey", lw=1)
    highest = max(curve.max() for curve in curves.values())
    density_ax.set(yscale="log", ylim=(1e-9, 3 * highest), xlabel="Hessian eigenvalue", ylabel="density",
                   title="Spectral density (stochastic Lanczos quadrature)")
    _share_panel(share_ax, density, comparisons)
    fig.legend(*histograms.get_legend_handles_labels(), loc="outside lower center", ncol=3, fontsize="small",
               title="model (NEP: share of negative top eigenvalues; APE: mean positive one)")
    return fig


def pk_small_data_figure(runs: pd.DataFrame) -> plt.Figure:
    """[PK22] PK-1 and PK-6: training NLL and test error against the share of training data (ViT and
    CNN), and AlterNet's and its CNN's test error against it; mean over seeds, band: min to max."""
    table = runs.assign(model=runs.model.map(PK_MODELS))
    small = table[table.model.isin([PK_MODELS["vit"], PK_MODELS["cnn"]])]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.0), layout="constrained")
    for ax, column, label in ((axes[0], "train_loss", "training NLL"), (axes[1], "test_error", "test error")):
        sns.lineplot(data=small, x="fraction", y=column, hue="model", palette=PK_PALETTE, marker="o",
                     errorbar=("pi", 100), ax=ax)
        sns.lineplot(data=small, x="fraction", y="train_error" if column == "test_error" else "test_loss",
                     hue="model", palette=PK_PALETTE, marker="x", linestyle="--", errorbar=None, ax=ax, legend=False)
        ax.set(xscale="log", xlabel="share of the training images", ylabel=label,
               title=f"{label} (dashed: {'training error' if column == 'test_error' else 'test NLL'})")
    pair = table[table.model.isin([PK_MODELS["alternet"], PK_MODELS["cnn"]])]
    sns.lineplot(data=pair, x="fraction", y="test_error", hue="model", palette=PK_PALETTE, marker="o",
                 errorbar=("pi", 100), ax=axes[2])
    axes[2].set(xscale="log", xlabel="share of the training images", ylabel="test error",
                title="AlterNet against the CNN, of its shape (PK-6)")
    return fig


BRANCH_KINDS = {"conv": "convolution", "msa": "attention", "mlp": "MLP"}  # lesion.py's kinds, in block order
# branch kinds, not models: colours apart from those MODEL_COLOURS gives the models of this figure
KIND_PALETTE = dict(zip(BRANCH_KINDS.values(), [sns.color_palette("colorblind")[i] for i in (7, 5, 8)]))


def branch_label(model: str, stage: int, position: int, kind: str) -> str:
    """Where a lesioned branch sits, counted from 1 for the reader, and its kind on a second line:
    `stage 2, block 3` / `attention`."""
    block = f"block {position + 1}"
    return f"{block if model == 'vit' else f'stage {stage + 1}, {block}'}\n{BRANCH_KINDS[kind]}"


def pk_lesion_figure(lesions: pd.DataFrame) -> plt.Figure:
    """[PK22] PK-7: the test accuracy lost by removing each branch, AlterNet and the CNN of its shape (the
    control; by stage) and the ViT; one bar per branch, the mean over seeds, each seed a dot."""
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.2), layout="constrained")
    for ax, model in zip(axes, ("alternet", "cnn", "vit")):
        mine = lesions[lesions.model == model]
        places = zip(mine.stage, mine.position, mine.kind.map(list(BRANCH_KINDS).index))
        mine = mine.assign(branch=[branch_label(model, *where) for where in zip(mine.stage, mine.position, mine.kind)],
                           kind=mine.kind.map(BRANCH_KINDS))
        order = [branch for _, branch in sorted(set(zip(places, mine.branch)))]  # one bar per branch, in model order
        sns.barplot(data=mine, x="branch", y="accuracy_drop", hue="kind", order=order, palette=KIND_PALETTE,
                    dodge=False, errorbar=None, ax=ax)
        # no jitter: it draws random numbers, and the same tables must give the same bytes
        sns.stripplot(data=mine, x="branch", y="accuracy_drop", order=order, color="black", size=4, jitter=False,
                      ax=ax)
        removed = "branch" if model == "vit" else "block"
        ax.set(xlabel="", ylabel="test accuracy lost", title=f"{PK_MODELS[model]}: one {removed} removed at a time")
        ax.legend(title=removed, fontsize="small")
    fig.suptitle("Bars: mean over seeds; dots: seeds. Downsampling blocks have no identity path and are not removed",
                 fontsize="small")
    return fig


def pk_landscape_figure(slices: pd.DataFrame, weight_decay: float) -> plt.Figure:
    """[PK22] Fig. 1 style: each model's 2-D landscape, the loss (NLL + weight decay x the sum of the
    parameters' norms) above its centre on the plane, mean over seeds, side by side on one colour scale;
    and the 1-D lines, each seed's loss rise against the step along its direction."""
    table = slices.assign(loss=slices.nll + weight_decay * slices.norms)
    centre = table[(table.slice == landscape.PLANE) & (table.alpha == 0) & (table.beta == 0)]
    centre = centre.set_index(["model", "seed"]).loss
    table["rise"] = table.loss.to_numpy() - centre.loc[list(zip(table.model, table.seed))].to_numpy()
    models = list(dict.fromkeys(table.model))
    plane = table[table.slice == landscape.PLANE].groupby(["model", "alpha", "beta"]).rise.mean().reset_index()
    # one scale for every model; a point below its centre (the centre need not be the slice's lowest) stays on it
    low, top = min(0.0, float(plane.rise.min())), float(plane.rise.max())
    levels = np.linspace(low, top if top > low else low + 1, 15)
    fig, axes = plt.subplots(1, len(models) + 1, figsize=(4.2 * (len(models) + 1), 4.0), layout="constrained")
    for ax, model in zip(axes, models):
        mine = plane[plane.model == model].pivot(index="beta", columns="alpha", values="rise")
        filled = ax.contourf(mine.columns, mine.index, mine.to_numpy(), levels=levels, cmap="plasma")
        ax.set(xlabel="direction 1", ylabel="direction 2", aspect="equal",
               title=f"{PK_MODELS[model]} (centre loss {centre[model].mean():.3g})")
    fig.colorbar(filled, ax=axes[len(models) - 1], label="loss above the centre (mean over seeds)")
    lines = table[table.slice == landscape.LINE]
    for model in models:
        for _, one in lines[lines.model == model].groupby(["seed", "line"]):
            axes[-1].plot(one.alpha, one.rise, color=model_colour(model), lw=0.8, alpha=0.6)
        axes[-1].plot([], [], color=model_colour(model), label=PK_MODELS[model])
    axes[-1].set(xlabel="step along a line's direction", ylabel="loss above the centre",
                 title="1-D lines (each seed and line)")
    axes[-1].legend(fontsize="small")
    fig.suptitle("Loss landscapes on filter-normalised directions (PK-10)", fontsize="small")
    return fig


FREQUENCY_LABELS = PK_MODELS | {frequency.CONTROL: "CNN trained on low-passed images (control)"}
FREQUENCY_PALETTE = PK_PALETTE | {FREQUENCY_LABELS[frequency.CONTROL]: (0.5, 0.5, 0.5)}


def pk_frequency_figure(rows: pd.DataFrame) -> plt.Figure:
    """PK-11: each model's test accuracy on low-passed and high-passed images against the cutoff, and the
    share of cue conflicts read as the low-pass digit among those read as either; mean over seeds, band:
    min to max."""
    table = rows.assign(model=rows.model.map(FREQUENCY_LABELS),
                        low_cue_share=rows.low_cue / (rows.low_cue + rows.high_cue))
    long = table.melt(id_vars=["model", "seed", "cutoff"], value_vars=["low_accuracy", "high_accuracy"],
                      var_name="images", value_name="accuracy")
    long["images"] = long.images.map({"low_accuracy": "low-passed", "high_accuracy": "high-passed"})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.0), layout="constrained")
    sns.lineplot(data=long, x="cutoff", y="accuracy", hue="model", style="images", palette=FREQUENCY_PALETTE,
                 marker="o", errorbar=("pi", 100), ax=axes[0])
    axes[0].set(xlabel="cutoff (units of π)", ylabel="test accuracy", title="Filtered test images")
    sns.lineplot(data=table, x="cutoff", y="low_cue_share", hue="model", palette=FREQUENCY_PALETTE, marker="o",
                 errorbar=("pi", 100), ax=axes[1])
    axes[1].axhline(0.5, color="grey", lw=1)
    axes[1].set(xlabel="cutoff (units of π)", ylabel="share read as the low-pass digit",
                title="Cue conflicts: low-pass of one digit + high-pass of another")
    for ax in axes:
        ax.legend(fontsize="x-small")
    return fig


CONTROL_COLOUR = (0.5, 0.5, 0.5)  # every control, as PK-11's


def _seed_points(ax: plt.Axes, table: pd.DataFrame, order: list[str], labels: dict[str, str],
                 colours: dict[str, Any], quantity: str) -> None:
    """Each model (x, in `order`) a dot per seed, its seeds joined across the models by a thin grey line
    (the comparisons are paired by seed), the mean a bar."""
    wide = table.pivot(index="seed", columns="model", values=quantity)[order]
    for _, seed in wide.iterrows():
        ax.plot(range(len(order)), seed.to_numpy(), color="grey", lw=0.6, alpha=0.5, zorder=1)
    for place, model in enumerate(order):
        ax.scatter([place] * len(wide), wide[model], color=colours[model], s=18, zorder=3)
        ax.hlines(wide[model].mean(), place - 0.3, place + 0.3, color=colours[model], lw=2.5, zorder=2)
    ax.set_xticks(range(len(order)), [labels[model] for model in order], rotation=20, ha="right", fontsize="small")


def pk_locality_figure(accuracy: pd.DataFrame, spectra: pd.DataFrame, density: pd.DataFrame) -> plt.Figure:
    """PK-12: the test accuracy of the global ViT, each window's and the control's, and their Hessians'
    negative curvature share and lambda_max (mean over the mini-batches of a seed); each seed a dot, joined
    across the models. Every model a ViT, in the ViT's colour; the control grey."""
    windows = sorted({w for m, w in zip(accuracy.model, accuracy.window) if m not in (locality.GLOBAL, locality.CONTROL)},
                     reverse=True)
    names = [locality.GLOBAL] + [locality.model_name(w) for w in windows]
    control = accuracy[accuracy.model == locality.CONTROL].window.iloc[0]
    labels = {locality.GLOBAL: "global", locality.CONTROL: f"{control} x {control} off its grid (control)"} | {
        locality.model_name(w): f"{w} x {w} window" for w in windows}
    colours = {name: model_colour("vit") for name in names} | {locality.CONTROL: CONTROL_COLOUR}
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), layout="constrained")
    _seed_points(axes[0], accuracy, names + [locality.CONTROL], labels, colours, "test_accuracy")
    axes[0].set(ylabel="test accuracy", title="Test accuracy (paired by seed)")
    shares = negative_curvature_shares(density)
    _seed_points(axes[1], shares, names, labels, colours, "share")
    axes[1].set(ylabel="tr(H₋²) / tr(H²)", title="Negative curvature share (as PK-2)")
    largest = spectra[spectra.which == "max"].groupby(["model", "seed"]).eigenvalue.mean().reset_index()
    _seed_points(axes[2], largest, names, labels, colours, "eigenvalue")
    axes[2].set(ylabel="λ_max", yscale="log", title="Largest Hessian eigenvalue (as PK-8)")
    fig.suptitle("Local attention: the ViT with its attention in k x k windows of its patches (PK-12)",
                 fontsize="small")
    return fig


BUILDUP_LABELS = {buildup.ALL_CONV: "all-conv CNN", buildup.STAGE_END: "AlterNet: attention closing stages",
                  "stage_start": "attention at stage starts", "model_end": "attention at the model's end",
                  buildup.CONTROL: "AlterNet, closing attention removed (control)"}


def pk_buildup_figure(accuracy: pd.DataFrame) -> plt.Figure:
    """PK-13: the test accuracy of each placement of the attention blocks, from the all-conv CNN through the
    official AlterNet to the other placements and the control; each seed a dot, joined across them."""
    order = [buildup.ALL_CONV, buildup.STAGE_END, *buildup.PLACEMENTS, buildup.CONTROL]
    colours = {name: model_colour("alternet") for name in order} | {
        buildup.ALL_CONV: model_colour("cnn"), buildup.CONTROL: CONTROL_COLOUR}
    fig, ax = plt.subplots(figsize=(7, 4.4), layout="constrained")
    _seed_points(ax, accuracy, order, BUILDUP_LABELS, colours, "test_accuracy")
    ax.set(ylabel="test accuracy", title="Where the attention blocks go (PK-13, paired by seed)")
    return fig

def render(params: Any, noise_decides: str, share_comparisons: Sequence[tuple[str, str]]) -> None:
    """Every [PK22] figure, from its stages' artifacts; the claims name what they decide on
    (`noise_decides`, `share_comparisons`: vitheory.pk22.claims)."""
    dpi = params.render.dpi
    tables = {name: read_frame(table_path(name), columns) for name, columns in TABLES.items()}
    save_figure(pk_features_figure(tables["profiles"]), FEATURES, dpi)
    save_figure(pk_noise_figure(tables["noise"], noise_decides), NOISE, dpi)
    save_figure(pk_small_data_figure(read_frame(artifact("pk_train_runs"), trainings.COLUMNS)), SMALL_DATA, dpi)
    save_figure(pk_hessian_figure(tables["hessian"], tables["density"], share_comparisons), HESSIAN, dpi)
    save_figure(pk_lesion_figure(tables["lesion"]), LESION, dpi)
    weight_decay = read_json(artifact("pk_landscape_metrics"))["weight_decay"]
    save_figure(pk_landscape_figure(read_frame(artifact("pk_landscape_table"), landscape.COLUMNS), weight_decay),
                LANDSCAPE, dpi)
    save_figure(pk_frequency_figure(read_frame(artifact("pk_frequency_table"), frequency.COLUMNS)), FREQUENCY, dpi)
    # PK-12's global ViT: pk_analysis's first mini-batches, the ones the windows were read on
    batches = read_json(artifact("pk_locality_hessian_metrics"))["hessian_batches"]
    spectra, density = (pd.concat([table[(table.model == locality.GLOBAL) & (table.batch < batches)],
                                   read_frame(artifact(path), columns)])
                        for table, path, columns in ((tables["hessian"], "pk_locality_hessian", hessian.COLUMNS),
                                                     (tables["density"], "pk_locality_density", hessian.DENSITY_COLUMNS)))
    save_figure(pk_locality_figure(read_frame(artifact("pk_locality_table"), locality.COLUMNS), spectra, density),
                LOCALITY, dpi)
    save_figure(pk_buildup_figure(read_frame(artifact("pk_buildup_table"), buildup.COLUMNS)), BUILDUP, dpi)
