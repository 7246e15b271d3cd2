"""Where every artifact lives: the `vars` of dvc.yaml, the one place a path is written.

dvc.yaml interpolates them into its stages' commands, deps and outs (`${paths.li_tokens}`, matrices
over `${runs.real_models}`); the stages, the claims, the figures and verify read them here.
`stage_of(path)` names the stage whose outputs hold a path, so that an error about an artifact says
which stage to rerun without any reader having to know it.
"""

from __future__ import annotations

import functools
import itertools
import re
from pathlib import Path
from typing import Any

import yaml

from vitheory.core.config import value_at

ROOT = Path(__file__).resolve().parents[2]
DVC_YAML = ROOT / "dvc.yaml"
_REFERENCE = re.compile(r"\$\{([\w.]+)\}")


@functools.cache
def _pipeline() -> dict[str, Any]:
    return yaml.safe_load(DVC_YAML.read_text())


@functools.cache
def _vars() -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for entry in _pipeline().get("vars", []):
        merged |= entry
    return merged


def artifact(name: str) -> Path:
    """The path, relative to the repository root, of the artifact dvc.yaml's `paths` calls `name`."""
    paths = _vars()["paths"]
    if name not in paths:
        raise KeyError(f"dvc.yaml has no paths.{name} (known: {', '.join(sorted(paths))})")
    return Path(paths[name])


def runs(name: str) -> list[str]:
    """The values of one matrix axis, dvc.yaml's `runs.<name>`."""
    return list(_vars()["runs"][name])


def run_name(*values: str) -> str:
    """The file or folder name of one run of a matrix stage (`vit_natural`): its values joined by `_`."""
    return "_".join(values)


def _interpolate(node: Any, context: dict[str, Any]) -> Any:
    """`${a.b}` references resolved as DVC resolves them: a whole-string reference keeps its type."""
    if isinstance(node, dict):
        return {_interpolate(k, context): _interpolate(v, context) for k, v in node.items()}
    if isinstance(node, list):
        return [_interpolate(item, context) for item in node]
    if not isinstance(node, str):
        return node
    whole = _REFERENCE.fullmatch(node)
    if whole:
        return value_at(context, whole[1])
    return _REFERENCE.sub(lambda m: str(value_at(context, m[1])), node)


@functools.cache
def stages() -> dict[str, dict[str, Any]]:
    """dvc.yaml's stages as DVC runs them: every `matrix` expanded into `name@v1-v2` stages, every
    reference resolved."""
    expanded = {}
    for name, stage in _pipeline()["stages"].items():
        if "matrix" not in stage:
            expanded[name] = _interpolate(stage, _vars())
            continue
        axes = {key: _interpolate(values, _vars()) for key, values in stage["matrix"].items()}
        body = {key: value for key, value in stage.items() if key != "matrix"}
        for values in itertools.product(*axes.values()):
            item = dict(zip(axes, values))
            expanded[f"{name}@{'-'.join(map(str, values))}"] = _interpolate(body, _vars() | {"item": item})
    return expanded


def outputs(stage: dict[str, Any]) -> list[str]:
    """The paths a stage writes: its outs, metrics and plots."""
    return [next(iter(o)) if isinstance(o, dict) else o for kind in ("outs", "metrics", "plots")
            for o in stage.get(kind, [])]


def stage_of(path: str | Path) -> str | None:
    """The stage whose outputs hold `path`; None if none does. A path outside this repository (another
    checkout's artifacts) is matched by its trailing parts."""
    absolute = Path(path).resolve()
    if absolute.is_relative_to(ROOT):
        candidates = [absolute.relative_to(ROOT)]
    else:
        candidates = [Path(*absolute.parts[i:]) for i in range(1, len(absolute.parts))]
    for name, stage in stages().items():
        for out in map(Path, outputs(stage)):
            if any(candidate == out or out in candidate.parents for candidate in candidates):
                return name
    return None
