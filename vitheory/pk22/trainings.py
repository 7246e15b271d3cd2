"""[PK22] trainings beyond train_real's, with its recipe: the ViT and the CNN on class-balanced fractions
of the training images (PK-1), AlterNet on every fraction and all the data (PK-6, PK-7: its CNN of
the same shape is that CNN), and the ViT with global average pooling on the smallest fraction (PK-2: [PK22]
says GAP suppresses the negative eigenvalues 'for small datasets', so it is compared with the class-token ViT
there); every model's training and test loss and error. Every fraction trains for as many optimiser steps as
all the data does."""

from __future__ import annotations

import math
from dataclasses import asdict, replace
from functools import partial
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from vitheory.core.artifacts import read_meta
from vitheory.core.checkpoint import load_checkpoint, save_checkpoint, seed_folder
from vitheory.core.paths import artifact, run_name
from vitheory.core.resume import Resume
from vitheory.images.datasets import balanced_subset
from vitheory.images.params import RecipeParams
from vitheory.images.recipe import FitTask
from vitheory.images.training import LoadedImages, build_model, evaluate, run_tasks
from vitheory.pk22.models import AlterNet
from vitheory.pk22.params import AlterNetPreset, PKTrainParams

COLUMNS = {"model": str, "fraction": float, "seed": int, "train_loss": float, "train_error": float,
           "test_loss": float, "test_error": float}
FULL_DATA_MODELS = ("vit", "cnn")  # train_real's (vitheory.images.params.REAL_MODELS), on all the images


def full_data_checkpoints(name: str) -> Path:
    """train_real's checkpoints (seed_<s>/) of the model `name` on natural images."""
    return artifact("real_models") / run_name(name, "natural")


def fraction_folder(name: str, fraction: float) -> str:
    """The folder, under pk_train's models, of a model trained on a fraction of the images."""
    return f"{name}_fraction_{fraction:g}"


def fraction_index(labels: torch.Tensor, fraction: float, seed: int) -> torch.Tensor:
    """The class-balanced training images a model of `fraction` trains on (all of them at 1)."""
    if fraction == 1:
        return torch.arange(len(labels), device=labels.device)
    return balanced_subset(labels.cpu(), fraction, torch.Generator().manual_seed(seed)).to(labels.device)


def build_alternet(preset: AlterNetPreset, image_size: int, channels: int, n_classes: int) -> AlterNet:
    """AlterNet for images of this shape, the preset's fields its keywords."""
    return AlterNet(image_size=image_size, channels=channels, n_classes=n_classes, **asdict(preset))


def run_trainings(cfg: PKTrainParams, real: RecipeParams, presets: Any, images_seed: int, data: LoadedImages,
                  device: torch.device, models: Path, resume: Resume) -> list[tuple]:
    """Every training of pk_train, each seed saved as a checkpoint under `models` and resumable from
    `resume`; with train_real's full-data ViT and CNN (`presets`: their sections of real.models) measured
    first. Rows of `COLUMNS`."""
    x, y = data.x, data.y
    runs = []

    def record(name: str, fraction: float, seed: int, model: nn.Module, index: torch.Tensor) -> None:
        train = evaluate(model, x["train"][index], y["train"][index])
        test = evaluate(model, x["test"], y["test"])
        runs.append((name, fraction, seed, train["loss"], 1 - train["accuracy"], test["loss"], 1 - test["accuracy"]))

    everything = torch.arange(len(y["train"]), device=device)
    for name in FULL_DATA_MODELS:
        for seed in range(real.seeds):
            record(name, 1.0, seed, load_checkpoint(full_data_checkpoints(name) / seed_folder(seed), device.type),
                   everything)
    trained = {name: getattr(presets, name) for name in FULL_DATA_MODELS} | {
        "vit_gap": replace(presets.vit, pool="gap")}
    shape = (data.image_size, data.channels, data.n_classes)
    builders = {name: partial(build_model, preset, *shape) for name, preset in trained.items()}
    builders["alternet"] = partial(build_alternet, cfg.alternet, *shape)

    def steps(n: int) -> int:
        return math.ceil(n / real.batch_size)

    # one CNN serves PK-1 and, as AlterNet's CNN of the same shape, PK-6 (pk22.params.relations)
    jobs = [(name, fraction) for fraction in cfg.fractions for name in ("vit", "cnn", "alternet")]
    jobs += [("alternet", 1.0), ("vit_gap", min(cfg.fractions))]
    plan, tasks = [], []
    for name, fraction in jobs:
        folder = name if fraction == 1 else fraction_folder(name, fraction)
        index = fraction_index(y["train"], fraction, images_seed)
        # as many optimiser steps as all the data gets: a small fraction must not stop short of converging
        epochs = math.ceil(real.epochs * steps(len(everything)) / steps(len(index)))
        for seed in range(real.seeds):
            plan.append((name, fraction, folder, index, epochs, seed))
            tasks.append(FitTask(builders[name], real, x["train"][index].cpu(), y["train"][index].cpu(), epochs, seed,
                                 {}, state=(resume.folder, f"{folder}_{seed_folder(seed)}"),
                                 desc=f"{folder} seed {seed}"))
    for (name, fraction, folder, index, epochs, seed), result in zip(plan, run_tasks(tasks, device)):
        model = builders[name]()
        model.load_state_dict(result.weights)
        model = model.to(device).eval()
        record(name, fraction, seed, model, index)
        save_checkpoint(models / folder / seed_folder(seed), model.cpu(), {
            "stage": "pk_train", "model": name, "fraction": fraction, "seed": seed, "epochs": epochs,
            "train": asdict(real), "data": read_meta(artifact("images"))["params"], "device": device.type})
    return runs


def train_named(builders: Mapping[str, Callable[[], nn.Module]], real: RecipeParams, data: LoadedImages,
                device: torch.device, folder: Path, meta: Callable[[str], dict]) -> dict[str, list[nn.Module]]:
    """Per builder, one model per seed of `real.seeds`, trained by the recipe on all the training images, each
    saved under `folder`/<name>/seed_<s>/ with `meta(name)`, its seed and the recipe."""
    plan = [(name, seed) for name in builders for seed in range(real.seeds)]
    tasks = [FitTask(builders[name], real, data.x["train"].cpu(), data.y["train"].cpu(), real.epochs, seed, {},
                     desc=f"{name} seed {seed}") for name, seed in plan]
    models: dict[str, list[nn.Module]] = {name: [] for name in builders}
    for (name, seed), result in zip(plan, run_tasks(tasks, device)):
        model = builders[name]()
        model.load_state_dict(result.weights)
        save_checkpoint(folder / name / seed_folder(seed), model.eval(),
                        meta(name) | {"seed": seed, "train": asdict(real)})
        models[name].append(model.to(device).eval())
    return models
