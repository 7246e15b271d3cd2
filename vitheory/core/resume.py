"""Resumable training: a stage's long trainings save their state after every epoch into one folder
(under `.vitheory/resume/`, outside every DVC output: DVC removes a stage's outputs before it runs),
so that a rerun after a kill continues where the killed one stopped and ends with the same bytes as
an uninterrupted run.

The folder holds `state.json` and, while the stage runs, one `<run>.safetensors` (weights, AdamW
moments, the data generator's state) with a `<run>.json` sidecar (epoch, schedule, per-epoch log) per
training run. Each save records its epoch in both files; a state whose files disagree or cannot be read
is discarded with a warning and that run trains afresh (resume state is a cache, never the only copy
of anything). The state belongs to one fingerprint: the stage's configuration, the bytes of its
input files and the source of every vitheory and stage module it runs. A rerun with anything changed
starts afresh. When the stage finishes, the folder is emptied down to `state.json` = complete, so a
forced rerun trains from scratch.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from safetensors import SafetensorError
from safetensors.torch import load_file

from vitheory.core.artifacts import atomic_path, write_json, write_tensors

STATE = "state.json"


def _file_digest(path: Path, digest: Any) -> None:
    digest.update(str(path).encode())
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)


def fingerprint(config: Mapping[str, Any], inputs: Iterable[str | Path]) -> str:
    """Digest of `config`, the files under `inputs` and the source of the loaded vitheory and stage modules."""
    digest = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode())
    files = [f for p in map(Path, inputs) for f in (sorted(p.rglob("*")) if p.is_dir() else [p]) if f.is_file()]
    sources = sorted({Path(m.__file__) for name, m in list(sys.modules.items())
                      if name.split(".")[0] in ("vitheory", "stages") and getattr(m, "__file__", None)})
    for path in files + sources:
        _file_digest(path, digest)
    return digest.hexdigest()


class UnusableState(Exception):
    pass


class RunState:
    """One training run's saved state; `epoch` and `log` are those of the last save (0 and [] if none)."""

    def __init__(self, folder: Path, name: str):
        self.tensors_path, self.meta_path = folder / f"{name}.safetensors", folder / f"{name}.json"
        self.meta: dict[str, Any] = {"epoch": 0, "log": []}
        self._tensors: dict[str, torch.Tensor] = {}
        if not self.meta_path.exists():  # never saved, or killed before its first sidecar
            return
        try:
            self.meta, self._tensors = self._load()
        except UnusableState as err:
            print(f"warning: {folder / name}: resume state {err}; discarded, this run trains afresh",
                  file=sys.stderr)
            self.tensors_path.unlink(missing_ok=True)
            self.meta_path.unlink(missing_ok=True)

    def _load(self) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
        try:
            meta = json.loads(self.meta_path.read_text())
            tensors = load_file(str(self.tensors_path))
        except (OSError, ValueError, SafetensorError) as err:
            raise UnusableState(f"unreadable ({err.__class__.__name__}: {err})") from None
        saved = int(tensors["epoch"]) if "epoch" in tensors else None
        if not isinstance(meta, dict) or saved != meta.get("epoch") or "generator" not in tensors:
            raise UnusableState(f"inconsistent (tensors of epoch {saved}, sidecar of epoch "
                                f"{meta.get('epoch') if isinstance(meta, dict) else None})")
        return meta, tensors

    @property
    def epoch(self) -> int:
        return self.meta["epoch"]

    @property
    def log(self) -> list[dict[str, float]]:
        return self.meta["log"]

    def restore(self, model: nn.Module, optimizer: torch.optim.Optimizer,
                schedule: torch.optim.lr_scheduler.LRScheduler, generator: torch.Generator) -> int:
        """Load the saved state into the fresh objects; the number of epochs already done."""
        if not self.epoch:
            return 0
        tensors = self._tensors or self._load()[1]  # read at construction, or saved since
        model.load_state_dict({k.removeprefix("model."): v for k, v in tensors.items() if k.startswith("model.")})
        optimizer_state = {int(i): {name: tensors[f"optimizer.{i}.{name}"] for name in names}
                           for i, names in self.meta["optimizer_state"].items()}
        optimizer.load_state_dict({"state": optimizer_state, "param_groups": self.meta["param_groups"]})
        schedule.load_state_dict(self.meta["schedule"])
        generator.set_state(tensors["generator"])
        self._tensors = {}  # in the model and optimizer now
        return self.epoch

    def save(self, epoch: int, metrics: Mapping[str, float], model: nn.Module, optimizer: torch.optim.Optimizer,
             schedule: torch.optim.lr_scheduler.LRScheduler, generator: torch.Generator) -> None:
        """Save the state after `epoch`, with that epoch's logged `metrics` appended to the log."""
        state = optimizer.state_dict()
        tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
        tensors |= {f"optimizer.{i}.{name}": value for i, entry in state["state"].items()
                    for name, value in entry.items()}
        tensors["generator"] = generator.get_state()
        tensors["epoch"] = torch.tensor(epoch)  # the sidecar names it too: a mismatch is a torn save
        self.meta = {"epoch": epoch, "log": self.log + [dict(metrics)],
                     "optimizer_state": {str(i): sorted(entry) for i, entry in state["state"].items()},
                     "param_groups": state["param_groups"],
                     "schedule": schedule.state_dict()}  # lr_lambdas: None for a plain function
        self._tensors = {}
        write_tensors(self.tensors_path, tensors)  # the sidecar last: it names an epoch the tensors hold
        write_json(self.meta_path, self.meta)


class Resume:
    """The resumable state of one stage run, in `folder`."""

    def __init__(self, folder: str | Path, fingerprint: str):
        self.folder = Path(folder)
        state = self.folder / STATE
        try:
            saved = json.loads(state.read_text())
        except (OSError, ValueError):  # absent or unreadable: nothing to resume
            saved = {}
        if saved != {"complete": False, "fingerprint": fingerprint}:
            self._reset({"complete": False, "fingerprint": fingerprint})

    def _reset(self, state: dict[str, Any]) -> None:
        with atomic_path(self.folder) as tmp:
            tmp.mkdir()
            (tmp / STATE).write_text(json.dumps(state, sort_keys=True) + "\n")

    def run(self, name: str) -> RunState:
        return RunState(self.folder, name)

    def finish(self) -> None:
        """The stage is done: drop the saved runs."""
        self._reset({"complete": True})
