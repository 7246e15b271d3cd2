"""[LI23] figures: attention mass and training curves (LI-3), the phase diagram and its scaling
(LI-1, LI-2), token sparsification on the token data (LI-4) and on real images (LI-5), N_min against the
initial model error (LI-7)."""

from __future__ import annotations

import textwrap
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

from vitheory.core import history
from vitheory.core.artifacts import read_json
from vitheory.core.figures import model_colour, read_frame, save_figure
from vitheory.core.paths import artifact, runs
from vitheory.li23 import initial_error, phase, sparsify, token_keeping
from vitheory.li23.phase import by_alpha

ATTENTION, TRAINING, PHASE_DIAGRAM, SCALING, SPARSIFY, SPARSIFY_REAL, INIT_ERROR = (
    "li_vit_attention", "li_vit_training", "phase_diagram", "phase_scaling", "sparsify", "sparsify_real",
    "init_error")


SUPTITLE_CHARACTERS = 110  # a line of a two-panel figure's small suptitle, within its width

QUERY_LABELS = {
    "attn_relevant_query": "label-relevant queries",
    "attn_confusion_query": "confusion queries",
    "attn_irrelevant_query": "label-irrelevant queries",
    "attn_all_query": "all queries",
}


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
                       col_order=["loss", "error_rate"], kind="line", errorbar=("pi", 100), height=3.2, aspect=1.2,
                       facet_kws={"sharey": False})  # band: seeds' range; the default bootstrap draws unseeded
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


def scaling_figure(summary: dict, grid: str) -> plt.Figure:
    """N_min and steps to zero test error against 1/alpha*, log-log, one line per model, with each
    fitted exponent in the legend (`summary`: one grid's fits by model; their intervals are the claims',
    in REPORT.md)."""
    rows = []
    for model, fit in summary.items():
        for quantity, key in (("N_min", "n_min"), ("steps", "steps")):
            rows += [{"model": model, "1/alpha*": 1 / alpha, "quantity": quantity, "value": value}
                     for alpha, value in by_alpha(fit[key])]
    table = pd.DataFrame(rows).query("value > 0")  # -1: never reached within the grid
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    panels = [("N_min", "n_min", "N_min: samples for zero test error"),
              ("steps", "steps", "SGD steps to zero test error")]
    for ax, (quantity, key, label) in zip(axes, panels):
        for model, fit in summary.items():
            exponent = fit[f"{key}_exponent"]
            points = table[(table.model == model) & (table.quantity == quantity)]
            censored = f", {len(fit['n_min_censored'])} censored" if key == "n_min" and fit["n_min_censored"] else ""
            text = "no fit" if exponent is None else f"exponent {exponent:.2f}{censored}"
            ax.plot(points["1/alpha*"], points.value, marker="o", color=model_colour(model), label=f"{model}: {text}")
        ax.set(xscale="log", yscale="log", xlabel="1 / alpha*", ylabel=label)
        ax.set_xticks(sorted(set(table["1/alpha*"])))
        ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(FormatStrFormatter("%.3g"))
            axis.set_minor_formatter(NullFormatter())
        ax.legend(fontsize="small", loc="lower right")
    fig.suptitle(textwrap.fill(f"{grid} grid, log-log, with the fitted exponents (their intervals: REPORT.md). A "
                               "missing N_min never reached the success threshold in the N grid (the fit takes its "
                               "largest N); a seed that never reached zero test error counts at the step budget.",
                               SUPTITLE_CHARACTERS), fontsize="small")
    return fig


# each strategy in its own hue, far from the others' in its panel: by kind of token (an oracle), then
# by a rule the model can apply
STRATEGY_PANELS = {"by kind of token (an oracle)": ("irrelevant", "confusion", "relevant"),
                   "by a rule": ("noisiest", "attention", "random")}
STRATEGY_COLOURS = dict(zip((s for panel in STRATEGY_PANELS.values() for s in panel),
                            (sns.color_palette("colorblind")[i] for i in (0, 1, 2, 3, 4, 7))))


def sparsify_figure(runs: pd.DataFrame) -> plt.Figure:
    """[LI23] Fig. 2b: test hinge loss against keep ratio, one panel per family of strategies, one line
    per strategy with its seeds' range as bars; the full data (no removal) as a grey band."""
    full = runs[runs.strategy == "none"].test_loss
    fig, axes = plt.subplots(1, len(STRATEGY_PANELS), figsize=(11, 4.2), sharey=True, layout="constrained")
    for ax, (title, strategies) in zip(axes, STRATEGY_PANELS.items()):
        ax.axhspan(full.min(), full.max(), color="grey", alpha=0.15)
        ax.axhline(full.mean(), color="grey", ls="--", label="no removal (mean; band: seeds)")
        sns.lineplot(data=runs[runs.strategy.isin(strategies)], x="keep_ratio", y="test_loss", hue="strategy",
                     hue_order=strategies, palette=STRATEGY_COLOURS, marker="o", err_style="bars",
                     errorbar=("pi", 100), err_kws={"capsize": 3, "elinewidth": 1}, ax=ax)
        ax.set(xlabel="keep ratio (share kept of the tokens a strategy targets)", ylabel="test hinge loss",
               title=f"Removing tokens {title}")
        ax.invert_xaxis()
        ax.legend(fontsize="small", title="bars: seeds' range")
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
    spurious["tokens"] = spurious.strategy.map({"all": "all tokens", "oracle": "marker's token removed",
                                                "attention": "most attended token removed"})
    test_images = {"spurious_clean": "no marker", "spurious_correlated": "its own class's marker",
                   "spurious_decorrelated": "a random class's marker"}
    sns.barplot(data=spurious, x="experiment", y="test_accuracy", hue="tokens", order=list(test_images),
                errorbar=("pi", 100), ax=axes[2])
    axes[2].set(xlabel="", ylabel="test accuracy", ylim=(0, 1.02),
                title="ViT trained with a class-correlated marker patch")
    axes[2].set_xticks(axes[2].get_xticks(), list(test_images.values()))
    return fig


INIT_ERROR_PANELS = {initial_error.VALUE: "the rule: W_V^(0) = I + sigma R", initial_error.TRAINED:
                     "positive control: from a trained W* to the default start"}
INIT_ERROR_AXES = {initial_error.VALUE: "initial value-embedding error sigma",
                   initial_error.TRAINED: "share of the way from W* back to the default start"}


def init_error_figure(record: dict) -> plt.Figure:
    """[LI23] LI-7: each seed's N_min against the initial-error level, one thin line per seed and the median
    over seeds, one panel per rule; an N_min never reached in the grid at CENSORED_AT x its largest N (as the
    claims count it), drawn hollow."""
    fig, axes = plt.subplots(1, len(INIT_ERROR_PANELS), figsize=(11, 4.2), sharey=True, layout="constrained")
    censored_at = phase.CENSORED_AT * max(record["n_train"])
    for ax, (rule, title) in zip(axes, INIT_ERROR_PANELS.items()):
        by_level = {float(level): [censored_at if n < 0 else n for n in seeds]
                    for level, seeds in record["n_min"][rule].items()}
        levels = sorted(by_level)
        for seed in range(len(by_level[levels[0]])):
            ax.plot(levels, [by_level[level][seed] for level in levels], color="grey", alpha=0.35, lw=0.8)
        ax.plot(levels, [pd.Series(by_level[level]).median() for level in levels], color="black", marker="o",
                label="median over seeds")
        hollow = [(level, n) for level in levels for n in by_level[level] if n == censored_at]
        if hollow:
            ax.scatter(*zip(*hollow), facecolors="none", edgecolors="black", label=f"never reached (at {censored_at})")
        ax.set(yscale="log", xlabel=INIT_ERROR_AXES[rule], ylabel="N_min: samples for zero test error", title=title)
        ax.set_xticks(levels)
        ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(FormatStrFormatter("%.3g"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.legend(fontsize="small", loc="upper left")
    fig.suptitle(textwrap.fill("N_min per seed (thin lines) and its median against the initial model error, "
                               "at one alpha* and tau; the claim's verdict and interval: REPORT.md, LI-7.",
                               SUPTITLE_CHARACTERS), fontsize="small")
    return fig


def phase_figure(name: str, grid: str) -> str:
    """A phase figure's name on one grid: `phase_diagram_default`."""
    return f"{name}_{grid}"


def render(params: Any) -> None:
    """Every [LI23] figure, from its stages' artifacts."""
    dpi = params.render.dpi
    li_history = read_frame(artifact("li_vit_history"), history.COLUMNS)
    reference = read_json(artifact("li_vit_metrics"))["reference"]
    save_figure(attention_mass_figure(li_history, **reference), ATTENTION, dpi)
    save_figure(training_curves_figure(li_history), TRAINING, dpi)
    fits = read_json(artifact("phase_metrics"))["grids"]
    for grid in runs("phase_grids"):
        table = pd.concat([read_frame(phase.runs_path(grid, model), phase.COLUMNS) for model in runs("phase_models")])
        save_figure(phase_diagram_figure(table), phase_figure(PHASE_DIAGRAM, grid), dpi)
        save_figure(scaling_figure(fits[grid], grid), phase_figure(SCALING, grid), dpi)
    save_figure(sparsify_figure(read_frame(artifact("sparsify_runs"), sparsify.COLUMNS)), SPARSIFY, dpi)
    save_figure(init_error_figure(read_json(artifact("init_error_metrics"))), INIT_ERROR, dpi)
    save_figure(sparsify_real_figure(read_frame(artifact("sparsify_real_runs"), token_keeping.COLUMNS)),
                SPARSIFY_REAL, dpi)
