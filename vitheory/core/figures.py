"""What every paper's figures share: one theme, one save helper, long-form tables as data frames.

Each paper package draws its own figures (`vitheory.<paper>.figures`), one function per figure over
a long-form table, and a `render(params)` that reads its artifacts and saves them. A model keeps one
colour in every panel of every figure: `MODEL_COLOURS`, keyed by the model's name in params.yaml."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from vitheory.core.artifacts import atomic_path, read_table
from vitheory.core.config import Rule, Section, at_least, knob
from vitheory.core.paths import artifact


@dataclass(frozen=True)
class RenderParams(Section):
    """params.yaml `render`: how the figures are drawn; no model depends on it."""

    dpi: int = knob(at_least(50))
    context: Literal["paper", "notebook", "talk", "poster"] = knob()
    association_threshold: float = knob(Rule(lambda v: -1 <= v <= 1, "in [-1, 1]"))


# every model any figure draws, each in a colour of the colorblind palette at least 35 apart (CIELAB) from
# every other's: its orange and vermillion (3), its blue and sky blue (9), are too near to tell apart
MODEL_COLOURS = {model: sns.color_palette("colorblind")[index] for model, index in (
    ("vit", 0),
    ("cnn", 1),
    ("alternet", 2),
    ("vit_gap", 5),
    ("vit_small", 4),
    ("vit_positional", 7),
)}


def model_colour(model: str) -> tuple[float, float, float]:
    """`model`'s colour in every figure."""
    if model not in MODEL_COLOURS:
        raise ValueError(f"model {model!r} has no colour: add it to vitheory.core.figures.MODEL_COLOURS")
    return MODEL_COLOURS[model]


def model_palette(labels: Mapping[str, str]) -> dict[str, tuple[float, float, float]]:
    """A seaborn palette for a table whose models are shown by their labels (`labels`: name -> label)."""
    return {label: model_colour(model) for model, label in labels.items()}


def set_theme(context: str) -> None:
    sns.set_theme(context=context, style="whitegrid", palette="colorblind")


def save_figure(fig: plt.Figure, name: str, dpi: int) -> None:
    """Save as `<figures>/<name>.png` (`save_png`)."""
    save_png(fig, figure_path(name), dpi)


def save_png(fig: plt.Figure, path: Path, dpi: int) -> None:
    """Save as a PNG at `path`, then close; no timestamp or version in the file: same figure, same bytes."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, bbox_inches="tight", format="png", metadata={"Software": None})
    plt.close(fig)


def figure_path(name: str) -> Path:
    """Where the figure `name` is saved, under dvc.yaml's `paths.figures`."""
    return artifact("figures") / f"{name}.png"


def read_frame(path: str | Path, columns: Mapping[str, Callable[[str], Any]]) -> pd.DataFrame:
    """A long-form table written by `write_table`, typed by `columns`, as a data frame."""
    return pd.DataFrame(read_table(path, columns))
