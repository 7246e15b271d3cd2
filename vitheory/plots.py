"""Figures: one function per figure over a long-form table, one theme, one save helper."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from vitheory.artifacts import artifact_error, atomic_path
from vitheory.history import COLUMNS

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


def read_history(path: str | Path, stage: str) -> pd.DataFrame:
    path = Path(path)
    try:
        table = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise artifact_error(path, stage, f"not a readable CSV ({err.__class__.__name__})") from None
    if tuple(table.columns) != COLUMNS:
        raise artifact_error(path, stage, f"columns {list(table.columns)} are not {list(COLUMNS)}")
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
    curves = history[history.metric.isin(["loss", "error"])]
    grid = sns.relplot(data=curves, x="step", y="value", hue="split", col="metric",
                       col_order=["loss", "error"], kind="line", height=3.2, aspect=1.2,
                       facet_kws={"sharey": False})
    grid.set_axis_labels("SGD step", "")
    grid.set_titles("{col_name}")
    grid.axes[0][0].set_ylabel("hinge loss / 0-1 error")
    return grid.figure
