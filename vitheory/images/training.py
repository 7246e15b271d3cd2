"""The small image classifiers (vitheory.images.models) on real images: their data, built, trained and evaluated.

Loading the prepared splits (normalised by the training images' statistics), the fixed pixel permutation
of [JSL22] Figure 5, building a model from its preset, and the entry points of the one image trainer
(vitheory.images.batched, where the recipe is written): `fit` (one model, in place), `run_task` (one task,
a batch of one) and `run_tasks` (a stage's tasks: a worker process per seed on a CPU, stacked families of
seeds on a GPU).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

import torch
from torch import nn
from tqdm import tqdm

from vitheory.core.artifacts import read_meta
from vitheory.core.checkpoint import seed_folder
from vitheory.core.config import Section
from vitheory.core.history import log_step
from vitheory.core.processes import worker_pool
from vitheory.core.resume import Resume, RunState
from vitheory.images.batched import OneModel, compiles, evaluate_batch, fit_batch, train_batched
from vitheory.images.datasets import Images, load_prepared
from vitheory.images.models import ARCHITECTURES
from vitheory.images.params import RecipeParams
from vitheory.images.recipe import FitResult, FitTask

EpochLog = Callable[[int], dict[str, float]]


@dataclass(frozen=True)
class Normalizer:
    """Per-channel mean and standard deviation of the training images (0..255 scale)."""

    mean: torch.Tensor
    std: torch.Tensor

    @staticmethod
    def fit(train: Images) -> Normalizer:
        pixels = train.X.double().flatten(0, 2)  # (N*H*W, C)
        return Normalizer(pixels.mean(0).float(), pixels.std(0).clamp_min(1e-3).float())

    def __call__(self, images: Images) -> torch.Tensor:
        """(N, C, H, W) float images."""
        return ((images.X.float() - self.mean) / self.std).permute(0, 3, 1, 2).contiguous()


@dataclass(frozen=True)
class LoadedImages:
    """Prepared splits, normalised by the training images' statistics, on a device."""

    x: dict[str, torch.Tensor]  # (N, C, H, W) float
    y: dict[str, torch.Tensor]
    normalize: Normalizer
    image_size: int
    channels: int
    n_classes: int


def load_images(folder: str | Path, split_names: tuple[str, ...], device: torch.device) -> LoadedImages:
    """The splits written by prepare_images (the training split is always read: it sets the normalisation)."""
    splits = {name: load_prepared(folder, name) for name in dict.fromkeys(("train", *split_names))}
    meta = read_meta(folder)
    normalize = Normalizer.fit(splits["train"])
    height, _, channels = meta["image_shape"]
    return LoadedImages({name: normalize(splits[name]).to(device) for name in split_names},
                        {name: splits[name].y.to(device) for name in split_names}, normalize, height, channels,
                        len(meta["classes"]))


def pixel_permutation(height: int, width: int, block: int, seed: int) -> torch.Tensor:
    """One fixed permutation of the H*W pixel positions (row-major) that moves whole block x block
    squares (block 1: single pixels): a ViT with patches of that size sees its tokens shuffled, intact."""
    rows, cols = height // block, width // block
    order = torch.randperm(rows * cols, generator=torch.Generator().manual_seed(seed))
    source_row, source_col = order // cols, order % cols  # the block that lands at each block position
    pixel = torch.arange(height * width).reshape(height, width)
    blocks = pixel.reshape(rows, block, cols, block).permute(0, 2, 1, 3)  # (rows, cols, block, block)
    moved = blocks[source_row, source_col].reshape(rows, cols, block, block)
    return moved.permute(0, 2, 1, 3).reshape(-1)


def patch_order(permutation: torch.Tensor, image_size: int, patch: int) -> torch.Tensor | None:
    """For a pixel permutation that moves whole patch x patch squares: the natural patch index shown
    at each patch position of a permuted image (row-major); None when it splits patches."""
    grid = image_size // patch
    pixels = permutation.reshape(grid, patch, grid, patch).permute(0, 2, 1, 3).reshape(grid * grid, patch * patch)
    rows, cols = pixels // image_size, pixels % image_size
    source = (rows // patch) * grid + cols // patch  # (patches, pixels per patch): each pixel's natural patch
    if not (source == source[:, :1]).all():
        return None
    return source[:, 0]


def build_model(preset: Section, image_size: int, channels: int, n_classes: int) -> nn.Module:
    """The model of ARCHITECTURES[type(preset)] for images of this shape, the preset's fields its keywords.
    A model that pools globally (the CNN) takes images of any size and no `image_size`: it is not told theirs."""
    model = ARCHITECTURES[type(preset)]
    size = {"image_size": image_size} if "image_size" in inspect.signature(model).parameters else {}
    return model(**size, channels=channels, n_classes=n_classes, **asdict(preset))


def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 512,
             **forward: torch.Tensor) -> dict[str, float]:
    """Cross-entropy and accuracy of `model` on normalised images x; `forward` keywords are sliced
    with the batch (e.g. keep=...). The trainer's held-out evaluation of a batch of one."""
    return evaluate_batch(OneModel(model), x, y, batch_size, **forward)[0]


def fit(model: nn.Module, x: torch.Tensor, y: torch.Tensor, cfg: RecipeParams, *, epochs: int, seed: int,
        permutation: torch.Tensor | None = None, token_keep: Callable[[torch.Tensor], torch.Tensor] | None = None,
        on_epoch: EpochLog | None = None, state: RunState | None = None, progress: bool = True,
        desc: str = "train") -> None:
    """Train `model` in place for `epochs` on normalised images x (already on the model's device): the image
    trainer (vitheory.images.batched.fit_batch) on a batch of one, its data drawn from `seed`.

    `token_keep(batch) -> (B, k)` trains with sparsified tokens (the model must accept `keep`).
    `on_epoch(epoch)` returns the metrics to log after each epoch. With a `state`, training starts
    from its last saved epoch and saves after each epoch, with those metrics: a resumed run ends with
    the same bytes as an uninterrupted one. Where `cfg.compile_by_kind` switches it on for the model's kind,
    the training step's forward and backward go through torch.compile. Raises TrainingDiverged, after the
    epoch in which the loss became non-finite.
    """
    fit_batch(OneModel(model, compiles(type(model), cfg)), x, y, cfg, epochs=epochs, seeds=[seed],
              permutation=permutation, token_keep=token_keep,
              on_epoch=(lambda epoch: [on_epoch(epoch)]) if on_epoch else None, states=[state], progress=progress,
              descs=[desc])


def run_task(task: FitTask, device: str, progress: bool = True) -> FitResult:
    """Train one model from its seed, a batch of one, on one intra-op thread: its bits do not depend on the
    machine's cores."""
    torch.set_num_threads(1)
    return train_batched([task], torch.device(device), progress)[0]


def run_tasks(tasks: Sequence[FitTask], device: torch.device, progress: bool = True) -> list[FitResult]:
    """Every task, in order of `tasks`, by the one image trainer (vitheory.images.batched). On a CPU, a batch
    of one per task, one single-thread worker process per core running them side by side (measured here:
    faster than one process using both cores for models this small, see benchmarks/image_trainer.py); on a
    GPU each family of seeds as one batch of stacked models, but the tasks whose model kind
    `real.compile_by_kind` compiles, each a batch of one."""
    if device.type == "cuda":
        return train_batched(tasks, device, progress)
    workers = min(len(tasks), len(os.sched_getaffinity(0)))
    # the stage's overall bar, over its trainings (each training has its own, by epoch)
    overall = partial(tqdm, total=len(tasks), desc=f"{len(tasks)} trainings", disable=not progress, mininterval=1.0)
    if workers <= 1:
        return list(overall(run_task(task, device.type, progress) for task in tasks))
    with worker_pool(workers) as pool:
        return list(overall(pool.map(run_task, tasks, [device.type] * len(tasks), [progress] * len(tasks))))


def train_seeds(build: Callable[[], nn.Module], cfg: RecipeParams, data: LoadedImages, *,
                permutation: torch.Tensor | None, resume: Resume, live: Any, device: torch.device, desc: str
                ) -> list[tuple[nn.Module, dict[str, float]]]:
    """One model per seed (`cfg.seeds`), each from its own seed, trained by the image trainer on the training images
    (permuted when `permutation` is given, as are the held-out ones), the seeds side by side
    (`run_tasks`). The validation and test loss and accuracy, every `cfg.eval_every` epochs, go to DVCLive as
    `seed_<s>/<split>/<metric>`, seed by seed, and into `resume`, from which a killed run continues.
    Returns each model with its final validation and test metrics."""
    held_out = {name: (data.x[name].cpu(), data.y[name].cpu()) for name in ("val", "test")}
    tasks = [FitTask(build, cfg, data.x["train"].cpu(), data.y["train"].cpu(), cfg.epochs, seed, held_out,
                     permutation, (resume.folder, seed_folder(seed)), f"{seed_folder(seed)}/", f"{desc} seed {seed}")
             for seed in range(cfg.seeds)]
    trained = []
    for seed, result in enumerate(run_tasks(tasks, device)):
        for epoch, metrics in enumerate(result.log, start=1):
            if metrics:
                log_step(live, epoch, dict(sorted(metrics.items())))
        model = build()
        model.load_state_dict(result.weights)
        final = result.final
        trained.append((model.eval(), {"seed": seed, "val_accuracy": final["val"]["accuracy"],
                                       "test_accuracy": final["test"]["accuracy"], "test_loss": final["test"]["loss"]}))
    return trained
