"""[PK22] PK-12, Sec. 2: data specificity, not long-range dependency. The ViT with its attention masked to
k x k windows of its grid of patches (SmallViT's `window`), trained by train_real's recipe beside train_real's
global ViT: the test accuracy of each, and the Hessian of each window's ViT on the first mini-batches that
pk_analysis reads for the global one (PK-2's negative curvature share, PK-8's lambda_max).

The positive control: the smallest window's checkpoints read with their windows laid on a fixed random
permutation of the grid (as many tokens in each window, no longer neighbours). A model trained to read
neighbourhoods must read the moved windows worse: the accuracy comparison must find that loss.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import torch
from torch import nn

from vitheory.core.config import NON_NEGATIVE, Rule, Section, at_least, knob
from vitheory.images.models import SmallViT
from vitheory.images.params import RecipeParams, ViTPreset
from vitheory.images.training import LoadedImages, evaluate
from vitheory.pk22.trainings import train_named

COLUMNS = {"model": str, "seed": int, "window": int, "test_loss": float, "test_accuracy": float}
GLOBAL = "vit"  # train_real's natural-image ViT: global attention, window 0 in the table
CONTROL = "off_grid"  # the smallest window's ViT with its windows moved off their neighbours


@dataclass(frozen=True)
class LocalityParams(Section):
    """params.yaml `pk_locality`: the windows of PK-12, its Hessian's mini-batches and its control."""

    windows: tuple[int, ...] = knob(Rule(lambda v: v >= 1 and v % 2 == 1, "an odd side >= 1, in patches"))
    hessian_batches: int = knob(at_least(1))  # pk_analysis's first mini-batches, the global ViT's too
    seed: int = knob(NON_NEGATIVE)  # of the control's permutation of the grid


def model_name(window: int) -> str:
    """The table's and the checkpoints' name of the ViT of this window."""
    return f"vit_window{window}"


def build_window_vit(preset: ViTPreset, window: int, image_size: int, channels: int, n_classes: int) -> SmallViT:
    """The ViT of `preset` (train_real's) with its attention in `window` x `window` windows."""
    return SmallViT(image_size=image_size, channels=channels, n_classes=n_classes, **asdict(preset), window=window)


def off_grid(model: SmallViT, seed: int) -> SmallViT:
    """A copy of `model` that lays each patch's window on the cell of a fixed random permutation of the grid:
    the same number of tokens in every window as before, but not the patch's neighbours."""
    moved = copy.deepcopy(model)
    moved.window_order = torch.randperm(model.n_patches, generator=torch.Generator().manual_seed(seed))
    return moved


def train_windows(preset: ViTPreset, windows: tuple[int, ...], real: RecipeParams, data: LoadedImages,
                  device: torch.device, folder: Path) -> dict[int, list[nn.Module]]:
    """Per window, one ViT per seed of `real.seeds`, trained by train_real's recipe on all the training
    images, each saved under `folder`/vit_window<k>/seed_<s>/."""
    shape = (data.image_size, data.channels, data.n_classes)
    by_name = {model_name(window): window for window in windows}
    models = train_named({name: partial(build_window_vit, preset, window, *shape) for name, window in by_name.items()},
                         real, data, device, folder,
                         lambda name: {"stage": "pk_locality", "model": name, "window": by_name[name]})
    return {window: models[name] for name, window in by_name.items()}


def accuracy_row(name: str, seed: int, window: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple:
    """One row of `COLUMNS`: the model's test loss and accuracy."""
    measured = evaluate(model, x, y)
    return name, seed, window, measured["loss"], measured["accuracy"]
