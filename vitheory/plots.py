"""Figures: one function per figure over a long-form table, one theme, one save helper."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

from vitheory.artifacts import artifact_error, atomic_path
from vitheory.schemas import by_alpha

QUERY_LABELS = {
    "attn_relevant_query": "label-relevant queries",
    "attn_confusion_query": "confusion queries",
    "attn_irrelevant_query": "label-irrelevant queries",
    "attn_all_query": "all queries",
}


def set_theme(context: str) -> None:
    sns.set_theme(context=context, style="whitegrid", palette="colorblind")


def save_figure(fig: plt.Figure, path: str | Path, dpi: int) -> None:
    # no timestamp or version in the file: same figure, same bytes
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, bbox_inches="tight", format="png", metadata={"Software": None})
    plt.close(fig)


def read_table(path: str | Path, columns: Mapping[str, type], stage: str) -> pd.DataFrame:
    """A long-form CSV with exactly `columns`, or one ArtifactError line naming the stage to rerun."""
    path = Path(path)
    try:
        table = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise artifact_error(path, stage, f"not a readable CSV ({err.__class__.__name__})") from None
    if tuple(table.columns) != tuple(columns):
        raise artifact_error(path, stage, f"columns {list(table.columns)} are not {list(columns)}")
    return table


def attention_mass_figure(history: pd.DataFrame, uniform: float, all_query_cap: float) -> plt.Figure:
    """[LI23] LI-3: attention mass on label-relevant tokens against SGD step, by kind of query."""
    masses = history[(history.split == "test") & history.metric.isin(QUERY_LABELS)].copy()
    masses["query"] = masses.metric.map(QUERY_LABELS)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    sns.lineplot(data=masses, x="step", y="value", hue="query", hue_order=list(QUERY_LABELS.values()),
                 errorbar=("pi", 100), ax=ax)
    ax.axhline(uniform, color="grey", ls=":", lw=1.2, label=f"uniform attention ({uniform:.3g})")
    ax.axhline(all_query_cap, color="grey", ls="--", lw=1.2,
               label=f"all-query cap α*/(α*+α#) ({all_query_cap:.3g})")
    ax.set(xlabel="SGD step", ylabel="attention mass on label-relevant tokens", ylim=(0, 1.02),
           title="Attention concentrates on label-relevant tokens (test set)")
    ax.legend(title="mean over", fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


def training_curves_figure(history: pd.DataFrame) -> plt.Figure:
    """Hinge loss and 0-1 error against SGD step, train and test."""
    curves = history[history.metric.isin(["loss", "error_rate"])]
    grid = sns.relplot(data=curves, x="step", y="value", hue="split", col="metric",
                       col_order=["loss", "error_rate"], kind="line", height=3.2, aspect=1.2,
                       facet_kws={"sharey": False})
    grid.set_axis_labels("SGD step", "")
    grid.set_titles("{col_name}")
    grid.axes[0][0].set_ylabel("hinge loss / 0-1 error")
    return grid.figure


def phase_diagram_figure(runs: pd.DataFrame) -> plt.Figure:
    """[LI23] Fig. 1: success rate (share of seeds with zero test error) over N and alpha*, one row
    per model, with alpha* and 1/alpha*^2 as columns."""
    rates = runs.groupby(["model", "alpha_star", "n_train"], sort=False, as_index=False)["success"].mean()
    models = list(dict.fromkeys(runs.model))
    fig, axes = plt.subplots(len(models), 2, figsize=(10, 3.8 * len(models)), squeeze=False, layout="constrained")
    for row, model in zip(axes, models):
        grid = rates[rates.model == model].pivot(index="n_train", columns="alpha_star", values="success")
        grid = grid.sort_index(ascending=False)
        for ax, labels, xlabel in [(row[0], [f"{a:g}" for a in grid.columns], "alpha*"),
                                   (row[1], [f"{1 / a ** 2:.1f}" for a in grid.columns], "1 / alpha*²")]:
            sns.heatmap(grid, ax=ax, vmin=0, vmax=1, cmap="viridis", annot=True, fmt=".1f",
                        annot_kws={"fontsize": "x-small"}, xticklabels=labels, cbar=ax is row[1],
                        cbar_kws={"label": "success rate"})
            ax.set(xlabel=xlabel, ylabel="training samples N", title=f"{model}: share of seeds with zero test error")
    return fig


def scaling_figure(summary: dict) -> plt.Figure:
    """N_min and steps to zero training error against 1/alpha*, log-log, one line per model, with
    each fitted exponent and its bootstrap interval in the legend."""
    rows = []
    for model, fit in summary["models"].items():
        for quantity, key in (("N_min", "n_min"), ("steps", "steps")):
            rows += [{"model": model, "1/alpha*": 1 / alpha, "quantity": quantity, "value": value}
                     for alpha, value in by_alpha(fit[key])]
    table = pd.DataFrame(rows).query("value > 0")  # -1: never reached within the grid
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    panels = [("N_min", "n_min", "N_min: samples for zero test error"),
              ("steps", "steps", "SGD steps to zero training error")]
    for ax, (quantity, key, label) in zip(axes, panels):
        for model, fit in summary["models"].items():
            exponent, low, high = (fit[f"{key}_exponent{end}"] for end in ("", "_ci_low", "_ci_high"))
            points = table[(table.model == model) & (table.quantity == quantity)]
            text = "no fit" if exponent is None else f"exponent {exponent:.2f} [{low:.2f}, {high:.2f}]"
            ax.plot(points["1/alpha*"], points.value, marker="o", label=f"{model}: {text}")
        ax.set(xscale="log", yscale="log", xlabel="1 / alpha*", ylabel=label)
        ax.set_xticks(sorted(set(table["1/alpha*"])))
        ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(FormatStrFormatter("%.3g"))
            axis.set_minor_formatter(NullFormatter())
        ax.legend(fontsize="small", loc="lower right")
    fig.suptitle("log-log, fitted exponent [bootstrap 95% interval]; a missing point never reached the "
                 "success threshold within the N grid (left) or zero training error (right)", fontsize="small")
    return fig


def sparsify_figure(runs: pd.DataFrame) -> plt.Figure:
    """[LI23] Fig. 2b: test hinge loss against keep ratio, one line per strategy, seeds as bands;
    the full data (no removal) as a horizontal band."""
    full = runs[runs.strategy == "none"].test_loss
    sparse = runs[runs.strategy != "none"]
    fig, ax = plt.subplots(figsize=(6.8, 4.2))
    ax.axhspan(full.min(), full.max(), color="grey", alpha=0.15)
    ax.axhline(full.mean(), color="grey", ls="--", label="no removal (mean; band: seeds)")
    sns.lineplot(data=sparse, x="keep_ratio", y="test_loss", hue="strategy", marker="o",
                 errorbar=("pi", 100), ax=ax)
    ax.set(xlabel="keep ratio (share kept of the tokens a strategy targets)", ylabel="test hinge loss",
           title="Token sparsification")
    ax.invert_xaxis()
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


def _mosaic(gram: np.ndarray, threshold: float) -> np.ndarray:
    """Row i of a (D, D) similarity drawn as a sqrt(D) x sqrt(D) tile at patch i's place on the grid,
    tiles one blank pixel apart; values below `threshold` blanked to 0, as in [JSL22] Figure 1."""
    side = math.isqrt(gram.shape[0])
    shown = np.where(gram >= threshold, gram, 0.0)
    mosaic = np.full((side * (side + 1) - 1,) * 2, np.nan)
    for i in range(gram.shape[0]):
        row, col = divmod(i, side)
        mosaic[row * (side + 1):row * (side + 1) + side, col * (side + 1):col * (side + 1) + side] = \
            shown[i].reshape(side, side)
    return mosaic


def similarity_maps_figure(panels: list[tuple[str, np.ndarray]], threshold: float, title: str) -> plt.Figure:
    """Positional-encoding similarity maps side by side, as in [JSL22] Figure 1: the tile at each grid
    position shows that patch's cosine similarity to every patch."""
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 5.4), layout="constrained", squeeze=False)
    for ax, (panel_title, gram) in zip(axes[0], panels):
        image = ax.imshow(_mosaic(gram, threshold), cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
        ax.set(title=panel_title, xticks=[], yticks=[])
        ax.grid(False)
    blanked = f", below {threshold:g} shown as 0" if threshold > -1 else ""
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label=f"cos(p_i, p_j){blanked}")
    fig.suptitle(title)
    return fig


ASSOCIATION_LABELS = {"error_rate": "test 0-1 error", "pos_exact": "exact patch association (P Pᵀ)",
                      "pos_overlap": "mean Top-C overlap (P Pᵀ)"}


def spatial_training_figure(history: pd.DataFrame, chance: dict[str, float]) -> plt.Figure:
    """[JSL22] JSL-1/JSL-2: test error and patch association against gradient-descent step, median
    over seeds with the full range as a band."""
    curves = history[history.metric.isin(ASSOCIATION_LABELS)].copy()
    curves["quantity"] = curves.metric.map(ASSOCIATION_LABELS)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.0), layout="constrained")
    errors = curves[curves.metric == "error_rate"]
    sns.lineplot(data=errors, x="step", y="value", estimator="median", errorbar=("pi", 100), ax=axes[0])
    axes[0].set(xlabel="gradient-descent step", ylabel="test 0-1 error", ylim=(0, None), title="Test error")
    scores = curves[curves.metric != "error_rate"]
    sns.lineplot(data=scores, x="step", y="value", hue="quantity", estimator="median", errorbar=("pi", 100),
                 ax=axes[1])
    axes[1].axhline(chance["overlap"], color="grey", ls=":", label=f"chance overlap ({chance['overlap']:.2f})")
    axes[1].set(xlabel="gradient-descent step", ylabel="share of patches", ylim=(0, 1.02),
                title="Patch association (Definition 2.2)")
    axes[1].legend(fontsize="small", loc="lower right")
    fig.suptitle("Positional-attention ViT; median over seeds, band: min to max", fontsize="small")
    return fig


def transfer_figure(runs: pd.DataFrame, target: float) -> plt.Figure:
    """[JSL22] JSL-4: downstream test error against downstream samples, fine-tuned (positional
    attention frozen) and from scratch; median over seeds, band min to max; diverged runs left out."""
    fig, ax = plt.subplots(figsize=(6.8, 4.2))
    sns.lineplot(data=runs.dropna(subset=["test_error"]), x="n_train", y="test_error", hue="method", marker="o",
                 estimator="median", errorbar=("pi", 100), ax=ax)
    ax.axhline(target, color="grey", ls="--", label=f"target error ({target:g})")
    ax.set(xscale="log", xlabel="downstream training samples n", ylabel="downstream test 0-1 error",
           title="Transfer to a new feature w' orthogonal to w*")
    ax.xaxis.set_major_formatter(FormatStrFormatter("%d"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(sorted(set(runs.n_train)))
    ax.legend(fontsize="small")
    return fig


def real_accuracy_figure(runs: pd.DataFrame) -> plt.Figure:
    """[JSL22] JSL-5, JSL-6: test accuracy per model on natural and permuted images, one dot per seed."""
    fig, ax = plt.subplots(figsize=(7.0, 4.0))
    sns.barplot(data=runs, x="model", y="test_accuracy", hue="pixels", errorbar=None, alpha=0.5, ax=ax)
    # no jitter: it draws random numbers, and the same runs must give the same bytes
    sns.stripplot(data=runs, x="model", y="test_accuracy", hue="pixels", dodge=True, jitter=False, legend=False,
                  ax=ax, color="black", size=4)
    low = max(0.0, runs.test_accuracy.min() - 0.1)
    ax.set(ylim=(low, 1.0), xlabel="", ylabel="test accuracy", title="Natural vs permuted images (dots: seeds)")
    ax.legend(title="pixels", fontsize="small", loc="lower right")
    return fig


def sparsify_real_figure(runs: pd.DataFrame) -> plt.Figure:
    """[LI23] LI-5: test accuracy against kept tokens per strategy, at inference and after fine-tuning
    (mean over seeds, band min to max), and the spurious-patch test."""
    natural = runs[runs.experiment == "natural"]
    full = natural[natural.strategy == "all"].test_accuracy
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), layout="constrained")
    for ax, finetuned, title in ((axes[0], 0, "at inference"), (axes[1], 1, "after a short fine-tune")):
        part = natural[(natural.strategy != "all") & (natural.finetuned == finetuned)]
        ax.axhspan(full.min(), full.max(), color="grey", alpha=0.15)
        ax.axhline(full.mean(), color="grey", ls="--", label="all tokens")
        sns.lineplot(data=part, x="kept_tokens", y="test_accuracy", hue="strategy", marker="o",
                     errorbar=("pi", 100), ax=ax)
        ax.set(xlabel="patch tokens kept", ylabel="test accuracy", ylim=(0, 1.02), title=title)
        ax.legend(fontsize="small", loc="lower right")
    spurious = runs[runs.experiment != "natural"].copy()
    spurious["tokens"] = spurious.strategy.map({"all": "all", "attention": "most attended half"})
    sns.barplot(data=spurious, x="experiment", y="test_accuracy", hue="tokens", errorbar=("pi", 100), ax=axes[2])
    axes[2].set(xlabel="", ylabel="test accuracy", ylim=(0, 1.02),
                title="ViT trained with a class-correlated marker patch")
    axes[2].set_xticks(axes[2].get_xticks(), ["marker removed", "marker decorrelated"])
    return fig


PK_MODELS = {"vit": "ViT", "cnn": "CNN", "alternet": "AlterNet", "cnn_baseline": "CNN (AlterNet's depth)",
             "vit_gap": "ViT, average pooling", "vit_small": "ViT, smallest data fraction"}


def pk_features_figure(profiles: pd.DataFrame) -> plt.Figure:
    """[PK22] Figs. 2-3 style: high-frequency log amplitude (minus frequency 0) and spatial variance of
    every feature map against normalised depth, mean over seeds; the ViT's attention blocks shaded."""
    table = profiles.assign(model=profiles.model.map(PK_MODELS))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.0), layout="constrained")
    for ax, quantity, label in ((axes[0], "high_frequency", "Δ log amplitude at 1.0π"),
                                (axes[1], "variance", "feature-map variance")):
        sns.lineplot(data=table, x="depth", y=quantity, hue="model", marker="o", errorbar=("pi", 100), ax=ax)
        for depth in sorted(set(profiles[(profiles.model == "vit") & (profiles.kind == "msa")].depth)):
            ax.axvspan(depth - 0.04, depth + 0.04, color="grey", alpha=0.2, lw=0)
        ax.set(xlabel="normalised depth", ylabel=label)
    axes[1].set_yscale("log")
    fig.suptitle("Feature maps block by block (grey: the ViT's attention blocks; band: seeds)", fontsize="small")
    return fig


def pk_noise_figure(noise: pd.DataFrame) -> plt.Figure:
    """[PK22] Fig. 4 style: accuracy drop under noise band-passed at each frequency."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    sns.lineplot(data=noise.assign(model=noise.model.map(PK_MODELS)), x="frequency", y="accuracy_drop", hue="model",
                 marker="o", errorbar=("pi", 100), ax=ax)
    ax.set(xlabel="noise frequency (units of π)", ylabel="test accuracy drop", title="Band-passed noise")
    return fig


def pk_hessian_figure(hessian: pd.DataFrame) -> plt.Figure:
    """[PK22] Fig. 1 style: the pooled top eigenvalues of the training-loss Hessian, per model."""
    fig, ax = plt.subplots(figsize=(6.8, 4.0))
    for model in dict.fromkeys(hessian.model):
        label, values = PK_MODELS[model], hessian[hessian.model == model].eigenvalue
        nep, ape = (values < 0).mean(), values[values > 0].mean()
        sns.histplot(values, bins=30, stat="density", element="step", fill=False, ax=ax,
                     label=f"{label}: NEP {nep:.2f}, APE {ape:.3g}")
    ax.axvline(0, color="grey", lw=1)
    ax.set(xlabel="Hessian eigenvalue (largest magnitudes, pooled over mini-batches and seeds)",
           title="Hessian spectrum of the training loss")
    ax.legend(fontsize="small")
    return fig


def pk_small_data_figure(runs: pd.DataFrame) -> plt.Figure:
    """[PK22] PK-1 and PK-6: training NLL and test error against the share of training data (ViT and
    CNN), and the full-data test error of every model (AlterNet among them); mean over seeds."""
    table = runs.assign(model=runs.model.map(PK_MODELS))
    small = table[table.model.isin([PK_MODELS["vit"], PK_MODELS["cnn"]])]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.0), layout="constrained")
    for ax, column, label in ((axes[0], "train_loss", "training NLL"), (axes[1], "test_error", "test error")):
        sns.lineplot(data=small, x="fraction", y=column, hue="model", marker="o", errorbar=("pi", 100), ax=ax)
        sns.lineplot(data=small, x="fraction", y="train_error" if column == "test_error" else "test_loss",
                     hue="model", marker="x", linestyle="--", errorbar=None, ax=ax, legend=False)
        ax.set(xscale="log", xlabel="share of the training images", ylabel=label,
               title=f"{label} (dashed: {'training error' if column == 'test_error' else 'test NLL'})")
    full = table[table.fraction == 1.0]
    sns.barplot(data=full, x="model", y="test_error", errorbar=("pi", 100), ax=axes[2])
    axes[2].set(xlabel="", ylabel="test error", title="All the training data")
    axes[2].tick_params(axis="x", labelrotation=30)
    return fig
