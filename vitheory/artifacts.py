"""Reading and writing the pipeline's artifacts: tensors as safetensors, metadata as JSON.

Nothing is ever pickled. Every reader turns a missing, truncated or inconsistent file into one
`ArtifactError` line that names the file and the stage that makes it. Every writer writes to a
temporary name beside the target and renames it into place, so an interrupted stage leaves the
previous artifact whole.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from vitheory.errors import ArtifactError


def artifact_error(path: Path, stage: str, what: str) -> ArtifactError:
    """One line naming the file, what is wrong with it and the stage that rebuilds it."""
    return ArtifactError(f"{path}: {what}; run `dvc repro {stage}` to rebuild it")


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success it replaces `path` (a file or folder)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    old = path.with_name(f".{path.name}.old")
    for stale in (tmp, old):
        _remove(stale)
    try:
        yield tmp
    except BaseException:
        _remove(tmp)
        raise
    if tmp.is_dir() and path.exists():
        path.rename(old)  # a folder cannot be renamed over a non-empty one
        tmp.rename(path)
        _remove(old)
    else:
        os.replace(tmp, path)


def write_json(path: str | Path, obj: Any) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def read_json(path: str | Path, stage: str) -> Any:
    path = Path(path)
    if not path.is_file():
        raise artifact_error(path, stage, "missing")
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise artifact_error(path, stage, f"not valid JSON ({err.__class__.__name__})") from None


def write_tensors(path: str | Path, tensors: Mapping[str, torch.Tensor]) -> None:
    with atomic_path(path) as tmp:
        save_file({name: t.detach().cpu().contiguous() for name, t in tensors.items()}, str(tmp))


def read_tensors(path: str | Path, stage: str, names: tuple[str, ...] = ()) -> dict[str, torch.Tensor]:
    """Load a safetensors file; `names` are tensors that must be present."""
    path = Path(path)
    if not path.is_file():
        raise artifact_error(path, stage, "missing")
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as err:
        raise artifact_error(path, stage, f"not a readable safetensors file ({err})") from None
    absent = [name for name in names if name not in tensors]
    if absent:
        raise artifact_error(path, stage, f"lacks tensors {absent}")
    return tensors


# --- checkpoints --------------------------------------------------------------------------------

MODEL_CLASSES: dict[str, type[nn.Module]] = {}


def register_model(cls: type[nn.Module]) -> type[nn.Module]:
    """Make a model class loadable by `load_checkpoint`. Its `config` dict rebuilds it."""
    MODEL_CLASSES[cls.__name__] = cls
    return cls


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
    import vitheory.models  # noqa: F401 - registers the model classes

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
