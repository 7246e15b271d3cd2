"""Checkpoints: a folder with `model.safetensors` (every parameter and buffer) and `config.json`
(the model class's import path, its constructor keywords and what trained it), from which
`load_checkpoint` rebuilds the model alone, in any interpreter. Never a pickle.

The import path ("vitheory.<package>.models.<Class>") lets loading import the one module that defines
the class, so no list of model modules is kept and core names no paper. A path outside vitheory is
refused: a config.json cannot make loading import other code.
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


def seed_folder(seed: int) -> str:
    """The name of the checkpoint folder of one seed's model, inside a stage's folder of models."""
    return f"seed_{seed}"


def model_class(path: Any, config_file: Path) -> type[nn.Module]:
    """The nn.Module subclass at the import path `path` ("vitheory.<module>.<Class>"), as config.json
    (`config_file`) names it; anything else is one ArtifactError line."""
    module_name, _, name = path.rpartition(".") if isinstance(path, str) else ("", "", "")
    if not module_name.startswith("vitheory."):
        raise ArtifactError(f"{config_file}: names model class {path!r}, not an import path under vitheory "
                            "(\"vitheory.<module>.<Class>\"), the only classes load_checkpoint imports; load it "
                            "with the version of vitheory that wrote it")
    try:
        cls = getattr(importlib.import_module(module_name), name, None)
    except ModuleNotFoundError as err:
        if not f"{module_name}.".startswith(f"{err.name}."):
            raise  # the module exists, but something it imports does not
        cls = None
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise ArtifactError(f"{config_file}: names model class {path!r}, which this version of vitheory does "
                            "not define as an nn.Module; load it with the version that wrote it")
    return cls


def save_checkpoint(folder: str | Path, model: nn.Module, metadata: Mapping[str, Any]) -> None:
    """Write `model.safetensors` (every parameter and buffer) and `config.json` into `folder`.

    `config.json` holds the class's import path, the constructor keywords (`model.config`) and
    `metadata` (what trained it), so the folder alone rebuilds the model.
    """
    folder = Path(folder)
    with atomic_path(folder) as tmp:
        tmp.mkdir()
        save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()},
                  str(tmp / CHECKPOINT_TENSORS))
        path = f"{type(model).__module__}.{type(model).__qualname__}"
        config = {"class": path, "config": model.config, "metadata": dict(metadata)}
        (tmp / CHECKPOINT_CONFIG).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def checkpoint_metadata(folder: str | Path) -> dict[str, Any]:
    """What trained the checkpoint in `folder` (its config.json's `metadata`)."""
    return read_json(Path(folder) / CHECKPOINT_CONFIG)["metadata"]


def load_checkpoint(folder: str | Path, device: str = "cpu") -> nn.Module:
    """Rebuild a model saved by `save_checkpoint`, in eval mode, from its folder alone."""
    folder = Path(folder)
    config = read_json(folder / CHECKPOINT_CONFIG)
    cls = model_class(config.get("class") if isinstance(config, dict) else None, folder / CHECKPOINT_CONFIG)
    try:
        model = cls(**config["config"])
    except (KeyError, TypeError, ValueError) as err:
        raise artifact_error(folder / CHECKPOINT_CONFIG, f"config does not build {cls.__name__}: {err}") from None
    tensors = read_tensors(folder / CHECKPOINT_TENSORS)
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    found = {k: tuple(v.shape) for k, v in tensors.items()}
    if expected != found:
        diff = sorted(set(expected.items()) ^ set(found.items()))
        raise artifact_error(folder / CHECKPOINT_TENSORS,
                             f"tensors do not match {CHECKPOINT_CONFIG} (name, shape differing: {diff})")
    model.load_state_dict(tensors)
    return model.to(device).eval()
