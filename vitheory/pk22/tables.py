"""[PK22] pk_analysis's tables: every analysis on every trained model and seed (feature maps: ViT, CNN,
AlterNet; noise: ViT, CNN; Hessian: ViT, CNN, ViT with global average pooling, ViT on the smallest data
fraction), and the summary the claims read."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from vitheory.core.checkpoint import load_checkpoint, seed_folder
from vitheory.core.paths import artifact
from vitheory.images.training import LoadedImages
from vitheory.pk22 import feature_maps, hessian, lesion, noise
from vitheory.pk22.feature_maps import change_by_kind
from vitheory.images.params import RealTrainParams
from vitheory.pk22.params import PKParams
from vitheory.pk22.trainings import fraction_folder, fraction_index, full_data_checkpoints

TABLES = {"profiles": feature_maps.COLUMNS, "noise": noise.COLUMNS, "hessian": hessian.COLUMNS,
          "lesion": lesion.COLUMNS, "density": hessian.DENSITY_COLUMNS}


def table_path(name: str) -> Path:
    """One of pk_analysis's tables (`TABLES`)."""
    return artifact("pk_tables") / f"{name}.csv"


def model_folders(smallest_fraction: float) -> dict[str, Path]:
    """The checkpoints (seed_<s>/) each analysis reads, by model."""
    return {"vit": full_data_checkpoints("vit"), "cnn": full_data_checkpoints("cnn"),
            "alternet": artifact("pk_models") / "alternet", "cnn_baseline": artifact("pk_models") / "cnn_baseline",
            "vit_gap": artifact("pk_models") / "vit_gap",
            "vit_small": artifact("pk_models") / fraction_folder("vit", smallest_fraction)}


def analyse(cfg: PKParams, train: RealTrainParams, smallest_fraction: float, alternet_seeds: int, images_seed: int,
            data: LoadedImages, device: torch.device) -> dict[str, list[tuple]]:
    """Every table of `TABLES`: feature maps and noise on the first `cfg.n_images` test images, the
    Hessian of every model on mini-batches of its own training images, augmented as it trained;
    AlterNet and the CNN of its shape over all `alternet_seeds` they were trained with, the others
    over `train.seeds`."""
    x_test, y_test = data.x["test"][:cfg.n_images], data.y["test"][:cfg.n_images]
    # before any compute: the smallest training set must fill the Hessian's mini-batches
    hessian.check_batches(len(fraction_index(data.y["train"], smallest_fraction, images_seed)), cfg, "vit_small")
    tables: dict[str, list[tuple]] = {name: [] for name in TABLES}
    for name, folder in model_folders(smallest_fraction).items():
        own = fraction_index(data.y["train"], smallest_fraction if name == "vit_small" else 1.0, images_seed)
        for seed in range(alternet_seeds if name in ("alternet", "cnn_baseline") else train.seeds):
            model = load_checkpoint(folder / seed_folder(seed), device.type)
            if name in ("vit", "cnn", "alternet"):
                tables["profiles"] += feature_maps.profile_rows(name, seed, model, x_test)
            if name in ("vit", "alternet"):
                tables["lesion"] += lesion.lesion_rows(name, seed, model, x_test, y_test)
            if name in ("vit", "cnn"):
                tables["noise"] += noise.noise_rows(name, seed, model, x_test, y_test, cfg)
            # every model's Hessian: PK-2 reads the ViTs and the CNN, PK-8 AlterNet and its CNN too
            eigenvalues, density = hessian.hessian_rows(name, seed, model, data.x["train"][own], data.y["train"][own],
                                                        cfg, train)
            tables["hessian"] += eigenvalues
            tables["density"] += density
    return tables


def density_units(density_rows: Sequence[Sequence], name: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Model `name`'s density nodes and weights, one pair of arrays per (seed, mini-batch)."""
    units: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for model, seed, batch, _, node, weight in density_rows:
        if model == name:
            units.setdefault((seed, batch), []).append((node, weight))
    return [tuple(np.array(column) for column in zip(*units[key])) for key in sorted(units)]


def summarize(profiles: Sequence[Sequence], noise_rows: Sequence[Sequence], hessian_rows: Sequence[Sequence],
              lesion_rows: Sequence[Sequence], density_rows: Sequence[Sequence]) -> dict:
    """pk_analysis's metrics from its tables (rows in the order of each module's `COLUMNS`). Mean change
    of the high-frequency delta and of the variance across the blocks of each kind, downsampling blocks
    left out (over seeds; ViT, CNN, AlterNet), the accuracy drop at the lowest and highest noise band (ViT, CNN), and
    NEP, APE, both ends of the Hessian's spectrum and the density's negative curvature share (ViT, CNN,
    ViT with global average pooling, ViT on the smallest data fraction), and the mean accuracy lost by removing each kind of branch (ViT,
    AlterNet)."""
    summary = {}
    for name in ("vit", "cnn", "alternet"):
        changes = {"high_frequency": {}, "variance": {}}
        for seed in sorted({row[1] for row in profiles if row[0] == name}):
            profile = [dict(zip(feature_maps.COLUMNS, r)) for r in profiles if r[0] == name and r[1] == seed]
            for quantity, by_kind in changes.items():
                for kind, change in change_by_kind(profile, quantity).items():
                    by_kind.setdefault(kind, []).append(change)
        for quantity, by_kind in changes.items():
            for kind, values in by_kind.items():
                summary[f"{name}_{quantity}_change_{kind}"] = float(np.mean(values))
    for name in ("vit", "cnn"):
        drops = {}
        for _, _, frequency, _, drop in (r for r in noise_rows if r[0] == name):
            drops.setdefault(frequency, []).append(drop)
        summary[f"{name}_noise_drop_lowest"] = float(np.mean(drops[min(drops)]))
        summary[f"{name}_noise_drop_highest"] = float(np.mean(drops[max(drops)]))
    for name in ("vit", "cnn", "vit_gap", "vit_small", "alternet", "cnn_baseline"):
        eigenvalues = np.array([r[5] for r in hessian_rows if r[0] == name and r[3] == "top"])
        summary[f"{name}_nep"] = float((eigenvalues < 0).mean())
        summary[f"{name}_ape"] = float(eigenvalues[eigenvalues > 0].mean()) if (eigenvalues > 0).any() else 0.0
        for end in ("min", "max"):
            summary[f"{name}_lambda_{end}"] = float(np.mean([r[5] for r in hessian_rows if r[0] == name and r[3] == end]))
        summary[f"{name}_negative_curvature_share"] = float(np.mean(
            [hessian.negative_curvature_share(*unit) for unit in density_units(density_rows, name)]))
    for name in ("vit", "alternet"):
        for kind in sorted({r[3] for r in lesion_rows if r[0] == name}):
            summary[f"{name}_lesion_drop_{kind}"] = float(np.mean([r[6] for r in lesion_rows
                                                                   if r[0] == name and r[3] == kind]))
    return summary
