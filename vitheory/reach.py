"""Which stages a claim's numbers pass through, and which params keys reach them, read from dvc.yaml:
the claim map of docs/REVIEWING.md and the atlas's lines (a claim has a line along a knob only where the
knob changes a dependency of one of its stages) both ask it."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from pathlib import Path

from vitheory.core.claims import Claim
from vitheory.core.paths import outputs, stages

JUDGE = "report"  # the stage that decides every claim: its own params (the intervals' settings) reach them all


@functools.cache  # asked of the same paths for every claim
def writers(path: Path) -> list[str]:
    """The stages whose outputs are `path`, hold it, or lie inside it (a folder of per-run files)."""
    return [name for name, stage in stages().items()
            if any(out == path or out in path.parents or path in out.parents for out in map(Path, outputs(stage)))]


def upstream(paths: Iterable[Path]) -> set[str]:
    """Every stage that `paths` pass through in dvc.yaml's graph: the stages that write them, then,
    recursively, those that write their deps. check_params, which every stage depends on and which
    computes nothing, is left out."""
    graph = stages()
    found: set[str] = set()
    todo = list(paths)
    while todo:
        for name in writers(todo.pop()):
            if name not in found and name != "check_params":
                found.add(name)
                todo += [Path(dep) for dep in graph[name].get("deps", []) if writers(Path(dep))]
    return found


def claim_data(claim: Claim) -> list[Path]:
    """The tables and records a claim reads (its evidence but the figures)."""
    return [path for path in claim.evidence if path.suffix != ".png"]


def claim_stages(claim: Claim) -> set[str]:
    """The stages whose runs a claim's numbers pass through, and the one that judges it."""
    return upstream(claim_data(claim)) | {JUDGE}


def listed_keys(stage: dict) -> list[str]:
    """The params keys a stage lists (a whole file listed only to be recorded, as `report` does, names none)."""
    keys = []
    for entry in stage.get("params", []):
        if isinstance(entry, str):
            keys.append(entry)
        else:
            keys += [key for listed in entry.values() for key in (listed or [])]
    return keys


def reaches(knob: str, stage_names: Iterable[str]) -> bool:
    """Whether the params key `knob` is a dependency of one of the stages: listed itself, inside a listed
    section, or holding a listed key."""
    graph = stages()
    return any(key == knob or knob.startswith(key + ".") or key.startswith(knob + ".")
               for name in stage_names for key in listed_keys(graph[name]))


def dependents(names: Iterable[str]) -> set[str]:
    """`names` and every stage that reads, directly or not, what one of them writes."""
    graph = stages()
    todo = list(names)
    found = set(todo)
    while todo:
        written = [Path(out) for out in outputs(graph[todo.pop()])]
        for name, stage in graph.items():
            reads = [Path(dep) for dep in stage.get("deps", [])]
            if name not in found and any(dep == out or out in dep.parents or dep in out.parents
                                         for dep in reads for out in written):
                found.add(name)
                todo.append(name)
    return found


def rerun_by(knob: str) -> set[str]:
    """The stages a change of `knob` reruns: those that list it, and every stage after them."""
    return dependents(name for name in stages() if reaches(knob, [name]))


def reached_claims(claims: Iterable[Claim], knobs: Mapping[str, Iterable[str]]) -> dict[str, set[str]]:
    """Each claim's id -> the knobs that reach one of its stages; `knobs`: each knob (an atlas line) -> the
    params keys its points set: it reaches a stage where one of them does."""
    return {claim.id: {knob for knob, keys in knobs.items() if any(reaches(key, claim_stages(claim)) for key in keys)}
            for claim in claims}
