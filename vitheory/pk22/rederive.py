"""[PK22] stored values re-derived from other raw artifacts, for `python -m vitheory.verify`: PK-10's plane
centre and corners from each checkpoint (the directions drawn again from their seeds), PK-11's rows from
each checkpoint and control. pk_analysis's and pk_train's tables are the claims' raw input: verify
re-evaluates those claims, DVC ties the tables to code."""

from __future__ import annotations

import math
from pathlib import Path

import torch

from vitheory.core.artifacts import read_table
from vitheory.core.checkpoint import load_checkpoint, seed_folder
from vitheory.core.config import read_params_file, view
from vitheory.core.paths import artifact, run_name
from vitheory.core.rederive import Problem, differs, same
from vitheory.images.params import RealTrainParams
from vitheory.images.training import load_images
from vitheory.pk22 import frequency, landscape

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
    path = artifact("pk_frequency_table")
    params = _params(root, {"pk_frequency": frequency.FrequencyParams, "real": RealTrainParams},
                     ["pk_frequency", "real.seeds"])
    data = load_images(root / artifact("images"), ("test",), torch.device("cpu"))
    folders = {name: _folder(root, name) for name in frequency.MODELS} | {
        frequency.CONTROL: root / artifact("pk_frequency_models")}
    again = [row for name, folder in folders.items() for seed in range(params.real.seeds)
             for row in frequency.frequency_rows(name, seed, load_checkpoint(folder / seed_folder(seed)),
                                                 data.x["test"], data.y["test"], params.pk_frequency)]
    stored = [tuple(row.values()) for row in read_table(root / path, frequency.COLUMNS)]
    return [] if same(sorted(stored), sorted(again)) else differs(path, "its rows differ from the checkpoints'")


CHECKS = (pk_landscape, pk_frequency)
