"""[PK22] pk_analysis's tables: every analysis, registered once in `ANALYSES` with its tables and the
models it runs on, on every trained model and seed. The claims compute every statistic from them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from vitheory.core.checkpoint import load_checkpoint, seed_folder
from vitheory.core.paths import artifact
from vitheory.images.training import LoadedImages
from vitheory.pk22 import feature_maps, hessian, lesion, noise
from vitheory.images.params import RealTrainParams
from vitheory.pk22.params import PKParams
from vitheory.pk22.trainings import fraction_folder, fraction_index, full_data_checkpoints


@dataclass(frozen=True)
class Inputs:
    """What an analysis of one model and seed may read: the first `cfg.n_images` test images, and the
    training images with `own`, the index of those the model trained on."""

    cfg: PKParams
    train: RealTrainParams
    x_test: torch.Tensor
    y_test: torch.Tensor
    data: LoadedImages
    own: torch.Tensor


@dataclass(frozen=True)
class Analysis:
    """One analysis: the tables it writes (name -> columns), the models it runs on, and
    `rows(name, seed, model, inputs)`, its rows of one model and seed by table name."""

    tables: Mapping[str, Mapping[str, Callable[[str], Any]]]
    models: tuple[str, ...]
    rows: Callable[[str, int, nn.Module, Inputs], dict[str, list[tuple]]]


def _hessian_tables(name: str, seed: int, model: nn.Module, inputs: Inputs) -> dict[str, list[tuple]]:
    eigenvalues, density = hessian.hessian_rows(name, seed, model, inputs.data.x["train"][inputs.own],
                                                inputs.data.y["train"][inputs.own], inputs.cfg, inputs.train)
    return {"hessian": eigenvalues, "density": density}


# in the order they run on each model and seed; one registration per analysis
ANALYSES = (
    Analysis({"profiles": feature_maps.COLUMNS}, ("vit", "cnn", "alternet"), lambda name, seed, model, inputs: {
        "profiles": feature_maps.profile_rows(name, seed, model, inputs.x_test)}),
    Analysis({"lesion": lesion.COLUMNS}, ("vit", "cnn", "alternet"), lambda name, seed, model, inputs: {
        "lesion": lesion.lesion_rows(name, seed, model, inputs.x_test, inputs.y_test)}),
    Analysis({"noise": noise.COLUMNS}, ("vit", "cnn"), lambda name, seed, model, inputs: {
        "noise": noise.noise_rows(name, seed, model, inputs.x_test, inputs.y_test, inputs.cfg)}),
    # every model's Hessian: PK-2 reads the ViTs and the CNN, PK-8 AlterNet and its CNN too
    Analysis({"hessian": hessian.COLUMNS, "density": hessian.DENSITY_COLUMNS},
             ("vit", "cnn", "alternet", "vit_gap", "vit_small"), _hessian_tables),
)
TABLES = {name: columns for analysis in ANALYSES for name, columns in analysis.tables.items()}  # every table, by name


def table_path(name: str) -> Path:
    """One of pk_analysis's tables (`TABLES`)."""
    return artifact("pk_tables") / f"{name}.csv"


def model_folders(smallest_fraction: float) -> dict[str, Path]:
    """The checkpoints (seed_<s>/) each analysis reads, by model."""
    return {"vit": full_data_checkpoints("vit"), "cnn": full_data_checkpoints("cnn"),
            "alternet": artifact("pk_models") / "alternet",
            "vit_gap": artifact("pk_models") / fraction_folder("vit_gap", smallest_fraction),
            "vit_small": artifact("pk_models") / fraction_folder("vit", smallest_fraction)}


SMALL_DATA_MODELS = ("vit_small", "vit_gap")  # model_folders' models trained on the smallest fraction


def analyse(cfg: PKParams, train: RealTrainParams, smallest_fraction: float, images_seed: int, data: LoadedImages, device: torch.device) -> dict[str, list[tuple]]:
    """Every table of `TABLES`, each analysis of `ANALYSES` on its models: feature maps, lesions and noise
    on the first `cfg.n_images` test images, the Hessian on mini-batches of the model's own training
    images, augmented as it trained; every model over `train.seeds`."""
    x_test, y_test = data.x["test"][:cfg.n_images], data.y["test"][:cfg.n_images]
    # before any compute: every noise band must hold a frequency, the smallest training set must fill
    # the Hessian's mini-batches
    noise.check_frequencies(data.image_size, cfg)
    hessian.check_batches(len(fraction_index(data.y["train"], smallest_fraction, images_seed)), cfg, "vit_small")
    tables: dict[str, list[tuple]] = {name: [] for name in TABLES}
    folders = model_folders(smallest_fraction)
    # the stage's one overall bar, over its units of work: models x seeds x the analyses of each model
    units = train.seeds * sum(name in analysis.models for name in folders for analysis in ANALYSES)
    with tqdm(total=units, desc="pk_analysis (model, seed, analysis)", mininterval=1.0) as progress:
        for name, folder in folders.items():
            own = fraction_index(data.y["train"], smallest_fraction if name in SMALL_DATA_MODELS else 1.0, images_seed)
            inputs = Inputs(cfg, train, x_test, y_test, data, own)
            for seed in range(train.seeds):
                model = load_checkpoint(folder / seed_folder(seed), device.type)
                for analysis in ANALYSES:
                    if name in analysis.models:
                        for table, rows in analysis.rows(name, seed, model, inputs).items():
                            tables[table] += rows
                        progress.update()
    return tables


def density_units(density_rows: Sequence[Mapping[str, Any]], name: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Model `name`'s density nodes and weights, one pair of arrays per (seed, mini-batch); rows keyed
    by `hessian.DENSITY_COLUMNS`."""
    units: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for row in density_rows:
        if row["model"] == name:
            units.setdefault((row["seed"], row["batch"]), []).append((row["eigenvalue"], row["weight"]))
    return [tuple(np.array(column) for column in zip(*units[key])) for key in sorted(units)]
