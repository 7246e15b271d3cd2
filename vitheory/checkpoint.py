"""Checkpoints: a folder with `model.safetensors` (every parameter and buffer) and `config.json`
(the model class, its constructor keywords and what trained it), from which `load_checkpoint`
rebuilds the model alone. Never a pickle."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from safetensors.torch import save_file
from torch import nn

from vitheory.artifacts import artifact_error, atomic_path, read_json, read_tensors
from vitheory.models import MODEL_CLASSES

CHECKPOINT_TENSORS = "model.safetensors"
CHECKPOINT_CONFIG = "config.json"


def save_checkpoint(folder: str | Path, model: nn.Module, metadata: Mapping[str, Any]) -> None:
    """Write `model.safetensors` (every parameter and buffer) and `config.json` into `folder`.

    `config.json` holds the class name, the constructor keywords (`model.config`) and `metadata`
    (what trained it), so the folder alone rebuilds the model.
    """
    folder = Path(folder)
    with atomic_path(folder) as tmp:
        tmp.mkdir()
        save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()},
                  str(tmp / CHECKPOINT_TENSORS))
        config = {"class": type(model).__name__, "config": model.config, "metadata": dict(metadata)}
        (tmp / CHECKPOINT_CONFIG).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def load_checkpoint(folder: str | Path, stage: str = "", device: str = "cpu") -> nn.Module:
    """Rebuild a model saved by `save_checkpoint`, in eval mode, from its folder alone."""
    folder = Path(folder)
    stage = stage or "(the stage that writes it)"
    config = read_json(folder / CHECKPOINT_CONFIG, stage)
    name = config.get("class") if isinstance(config, dict) else None
    if name not in MODEL_CLASSES:
        raise artifact_error(folder / CHECKPOINT_CONFIG, stage,
                       f"names model class {name!r}, known: {sorted(MODEL_CLASSES)}")
    try:
        model = MODEL_CLASSES[name](**config["config"])
    except (KeyError, TypeError, ValueError) as err:
        raise artifact_error(folder / CHECKPOINT_CONFIG, stage, f"config does not build {name}: {err}") from None
    tensors = read_tensors(folder / CHECKPOINT_TENSORS, stage)
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    found = {k: tuple(v.shape) for k, v in tensors.items()}
    if expected != found:
        diff = sorted(set(expected.items()) ^ set(found.items()))
        raise artifact_error(folder / CHECKPOINT_TENSORS, stage,
                       f"tensors do not match {CHECKPOINT_CONFIG} (name, shape differing: {diff})")
    model.load_state_dict(tensors)
    return model.to(device).eval()
