"""[PK22] stored values re-derived from other raw artifacts, for `python -m vitheory.verify`: PK-10's plane
centre and corners from each checkpoint (the directions drawn again from their seeds), PK-11's, PK-12's and
PK-13's accuracy rows from each checkpoint and control. pk_analysis's, pk_train's and pk_locality_hessian's
tables are the claims' raw input: verify re-evaluates those claims, DVC ties the tables to code."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from vitheory.core.artifacts import read_table
from vitheory.core.checkpoint import load_checkpoint, seed_folder
from vitheory.core.config import read_params_file, view
from vitheory.core.paths import artifact, run_name
from vitheory.core.rederive import Problem, differs
from vitheory.images.params import RealTrainParams
from vitheory.images.training import evaluate, load_images
from vitheory.pk22 import buildup, frequency, landscape, locality

# a loss recomputed in float32 on another machine may differ in its last bits; an accuracy is a count
LOSS_TOLERANCE = 1e-5


def _params(root: Path, sections: dict, keys: list[str]):
    return view(read_params_file(root / "params.yaml"), sections, keys, "verify")


def _folder(root: Path, model: str) -> Path:
    if model == "alternet":
        return root / artifact("pk_models") / "alternet"
    return root / artifact("real_models") / run_name(model, "natural")


def pk_landscape(root: Path) -> list[Problem]:
    """Each model's and seed's plane at its centre and four corners, from its checkpoint."""
    path = artifact("pk_landscape_table")
    params = _params(root, {"pk_landscape": landscape.LandscapeParams, "real": RealTrainParams},
                     ["pk_landscape", "real.seeds", "real.shift", "real.hflip"])
    cfg, real = params.pk_landscape, params.real
    data = load_images(root / artifact("images"), ("train",), torch.device("cpu"))
    x, y = landscape.fixed_batch(data.x["train"], data.y["train"], cfg.n_images, real.shift, real.hflip, cfg.seed)
    stored = {(row["model"], row["seed"], row["alpha"], row["beta"]): row["nll"]
              for row in read_table(root / path, landscape.COLUMNS) if row["slice"] == landscape.PLANE}
    corners = [(0.0, 0.0)] + [(a * cfg.extent, b * cfg.extent) for a in (-1.0, 1.0) for b in (-1.0, 1.0)]
    problems = []
    for model_name in landscape.MODELS:
        for seed in range(real.seeds):
            model = load_checkpoint(_folder(root, model_name) / seed_folder(seed))
            again = {(row[4], row[5]): row[6] for row in landscape.plane_points(model_name, seed, model, x, y, cfg, corners)}
            for point, nll in again.items():
                kept = stored.get((model_name, seed, *point))
                if kept is None or not math.isclose(kept, nll, rel_tol=LOSS_TOLERANCE):
                    problems += differs(path, f"{model_name} seed {seed}'s NLL at {point} is {kept}, its checkpoint "
                                              f"gives {nll:.6g}")
    return problems


def pk_frequency(root: Path) -> list[Problem]:
    """Every row, from the ViT's and the CNN's checkpoints and the controls'."""
    params = _params(root, {"pk_frequency": frequency.FrequencyParams, "real": RealTrainParams},
                     ["pk_frequency", "real.seeds"])
    data = load_images(root / artifact("images"), ("test",), torch.device("cpu"))
    folders = {name: _folder(root, name) for name in frequency.MODELS} | {
        frequency.CONTROL: root / artifact("pk_frequency_models")}
    again = [row for name, folder in folders.items() for seed in range(params.real.seeds)
             for row in frequency.frequency_rows(name, seed, load_checkpoint(folder / seed_folder(seed)),
                                                 data.x["test"], data.y["test"], params.pk_frequency)]
    return _same_rows(root, "pk_frequency_table", frequency.COLUMNS, again)



def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=LOSS_TOLERANCE) or math.isnan(a) and math.isnan(b)
    return a == b


def _same_rows(root: Path, name: str, columns: dict, again: list[tuple]) -> list[Problem]:
    """The table's rows are those its checkpoints give again, every float to LOSS_TOLERANCE (a forward pass
    under other numerics, MKL's portable branch say, moves a loss in its last bits)."""
    stored = sorted(tuple(row.values()) for row in read_table(root / artifact(name), columns))
    again = sorted(again)
    if len(stored) == len(again) and all(len(s) == len(a) and all(map(_close, s, a)) for s, a in zip(stored, again)):
        return []
    return differs(artifact(name), "its rows differ from the checkpoints'")


def pk_locality(root: Path) -> list[Problem]:
    """Every row, from train_real's global ViT, each window's checkpoints and the control made from them."""
    params = _params(root, {"pk_locality": locality.LocalityParams, "real": RealTrainParams},
                     ["pk_locality.windows", "pk_locality.seed", "real.seeds"])
    cfg = params.pk_locality
    data = load_images(root / artifact("images"), ("test",), torch.device("cpu"))
    x, y = data.x["test"], data.y["test"]
    again = []
    for seed in range(params.real.seeds):
        again.append(locality.accuracy_row(locality.GLOBAL, seed, 0, load_checkpoint(
            _folder(root, locality.GLOBAL) / seed_folder(seed)), x, y))
        for window in cfg.windows:
            model = load_checkpoint(root / artifact("pk_locality_models") / locality.model_name(window) / seed_folder(seed))
            again.append(locality.accuracy_row(locality.model_name(window), seed, window, model, x, y))
            if window == min(cfg.windows):
                again.append(locality.accuracy_row(locality.CONTROL, seed, window, locality.off_grid(model, cfg.seed),
                                                   x, y))
    return _same_rows(root, "pk_locality_table", locality.COLUMNS, again)


def pk_buildup(root: Path) -> list[Problem]:
    """Every row, from train_real's CNN, pk_train's AlterNet, each placement's checkpoints and the control."""
    params = _params(root, {"real": RealTrainParams}, ["real.seeds"])
    data = load_images(root / artifact("images"), ("test",), torch.device("cpu"))
    folders = {buildup.ALL_CONV: _folder(root, "cnn"), buildup.STAGE_END: _folder(root, "alternet")} | {
        name: root / artifact("pk_buildup_models") / name for name in buildup.PLACEMENTS}
    again = []
    for seed in range(params.real.seeds):
        models = {name: load_checkpoint(folder / seed_folder(seed)) for name, folder in folders.items()}
        models[buildup.CONTROL] = buildup.without_closing_attention(models[buildup.STAGE_END])
        for name, model in models.items():
            measured = evaluate(model, data.x["test"], data.y["test"])
            again.append((name, seed, measured["loss"], measured["accuracy"]))
    return _same_rows(root, "pk_buildup_table", buildup.COLUMNS, again)


CHECKS = (pk_landscape, pk_frequency, pk_locality, pk_buildup)
