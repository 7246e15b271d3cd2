"""Checkpoints: a folder with `model.safetensors` (every parameter and buffer) and `config.json`
(the model class, its constructor keywords and what trained it), from which `load_checkpoint`
rebuilds the model alone, in any interpreter. Never a pickle.

A model class becomes loadable with `@register_model`; `MODEL_MODULES` names every module that
defines one, and `load_checkpoint` imports them when it meets a class no imported module registered.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from safetensors.torch import save_file
from torch import nn

from vitheory.core.artifacts import artifact_error, atomic_path, read_json, read_tensors
from vitheory.core.errors import ArtifactError

CHECKPOINT_TENSORS = "model.safetensors"
CHECKPOINT_CONFIG = "config.json"
MODEL_MODULES = ("vitheory.li23.models", "vitheory.jsl22.models", "vitheory.images.models", "vitheory.pk22.models")
MODEL_CLASSES: dict[str, type[nn.Module]] = {}


def seed_folder(seed: int) -> str:
    """The name of the checkpoint folder of one seed's model, inside a stage's folder of models."""
    return f"seed_{seed}"


def register_model(cls: type[nn.Module]) -> type[nn.Module]:
    """Make a model class loadable by `load_checkpoint`: its `config` dict rebuilds it."""
    MODEL_CLASSES[cls.__name__] = cls
    return cls


def model_class(name: Any) -> type[nn.Module] | None:
    """The registered class called `name`, after importing every module of MODEL_MODULES if needed."""
    if name not in MODEL_CLASSES:
        for module in MODEL_MODULES:
            importlib.import_module(module)
    return MODEL_CLASSES.get(name)


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


def checkpoint_metadata(folder: str | Path) -> dict[str, Any]:
    """What trained the checkpoint in `folder` (its config.json's `metadata`)."""
    return read_json(Path(folder) / CHECKPOINT_CONFIG)["metadata"]


def load_checkpoint(folder: str | Path, device: str = "cpu") -> nn.Module:
    """Rebuild a model saved by `save_checkpoint`, in eval mode, from its folder alone."""
    folder = Path(folder)
    config = read_json(folder / CHECKPOINT_CONFIG)
    name = config.get("class") if isinstance(config, dict) else None
    cls = model_class(name)
    if cls is None:
        raise ArtifactError(f"{folder / CHECKPOINT_CONFIG}: names model class {name!r}, which this version of "
                            f"vitheory does not define (known: {', '.join(sorted(MODEL_CLASSES))}); load it with "
                            "the version that wrote it")
    try:
        model = cls(**config["config"])
    except (KeyError, TypeError, ValueError) as err:
        raise artifact_error(folder / CHECKPOINT_CONFIG, f"config does not build {name}: {err}") from None
    tensors = read_tensors(folder / CHECKPOINT_TENSORS)
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    found = {k: tuple(v.shape) for k, v in tensors.items()}
    if expected != found:
        diff = sorted(set(expected.items()) ^ set(found.items()))
        raise artifact_error(folder / CHECKPOINT_TENSORS,
                             f"tensors do not match {CHECKPOINT_CONFIG} (name, shape differing: {diff})")
    model.load_state_dict(tensors)
    return model.to(device).eval()
