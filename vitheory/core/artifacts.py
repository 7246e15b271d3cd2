"""Reading and writing the pipeline's artifacts: tensors as safetensors, metadata as JSON, tables as CSV.

Nothing is ever pickled. Every reader turns a missing, truncated or inconsistent file into one
`ArtifactError` line that names the file and the stage that makes it (found in dvc.yaml by
`vitheory.core.paths.stage_of`). Every writer writes to a temporary name beside the target and
renames it into place, so an interrupted write never leaves a half-written artifact (DVC itself
removes a stage's declared outputs before running it; its cache keeps their last versions).
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from vitheory.core.errors import ArtifactError
from vitheory.core.paths import stage_of
from vitheory.core.processes import writing

_OS_ERROR = re.compile(r"os error (\d+)")


def artifact_error(path: str | Path, what: str) -> ArtifactError:
    """One line naming the file, what is wrong with it and the stage that rebuilds it."""
    stage = stage_of(path)
    return ArtifactError(f"{path}: {what}; run `dvc repro{' ' + stage if stage else ''}` to rebuild it", path)


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success it replaces `path` (a file or folder). An
    orphaned worker exits before it writes anything (vitheory.core.processes.writing)."""
    path = Path(path)
    with writing():
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


def write_table(path: str | Path, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A CSV file: a header of `columns`, then one line per row."""
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)


def read_table(path: str | Path, columns: Mapping[str, Callable[[str], Any]]) -> list[dict[str, Any]]:
    """The rows of a CSV written by `write_table` with exactly `columns`, each value parsed by its column's type."""
    path = Path(path)
    if not path.is_file():
        raise artifact_error(path, "missing")
    try:
        with open(path, newline="") as handle:
            reader = csv.DictReader(handle)
            if tuple(reader.fieldnames or ()) != tuple(columns):
                raise artifact_error(path, f"columns {reader.fieldnames} are not {list(columns)}")
            rows = [{key: columns[key](value) for key, value in row.items()} for row in reader]
    except (ValueError, TypeError, KeyError, UnicodeDecodeError) as err:
        raise artifact_error(path, f"a row does not parse ({err.__class__.__name__}: {err})") from None
    if not rows:
        raise artifact_error(path, "has no rows")
    return rows


def write_json(path: str | Path, obj: Any) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def read_json(path: str | Path) -> Any:
    path = Path(path)
    if not path.is_file():
        raise artifact_error(path, "missing")
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise artifact_error(path, f"not valid JSON ({err.__class__.__name__})") from None


def write_tensors(path: str | Path, tensors: Mapping[str, torch.Tensor]) -> None:
    """A safetensors file; a failure of the file system (no space, no permission) is an OSError naming `path`."""
    with atomic_path(path) as tmp:
        try:
            save_file({name: t.detach().cpu().contiguous() for name, t in tensors.items()}, str(tmp))
        except SafetensorError as err:  # safetensors reports the OS's error only inside its message
            code = _OS_ERROR.search(str(err))
            if code is None:
                raise
            number = int(code[1])
            raise OSError(number, os.strerror(number), str(path)) from None


def read_tensors(path: str | Path, names: tuple[str, ...] = ()) -> dict[str, torch.Tensor]:
    """Load a safetensors file; `names` are tensors that must be present."""
    path = Path(path)
    if not path.is_file():
        raise artifact_error(path, "missing")
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as err:
        raise artifact_error(path, f"not a readable safetensors file ({err})") from None
    absent = [name for name in names if name not in tensors]
    if absent:
        raise artifact_error(path, f"lacks tensors {absent}")
    return tensors


# --- dataset folders: one safetensors file per split and a meta.json ---------------------------------


def write_splits(folder: str | Path, splits: Mapping[str, Mapping[str, torch.Tensor]], meta: Any) -> None:
    """`folder/<split>.safetensors` for each split (structures included) and `folder/meta.json`, all
    replaced at once."""
    with atomic_path(folder) as tmp:
        tmp.mkdir()
        for name, tensors in splits.items():
            write_tensors(tmp / f"{name}.safetensors", tensors)
        write_json(tmp / "meta.json", meta)


def read_split(folder: str | Path, split: str, names: tuple[str, ...]) -> dict[str, torch.Tensor]:
    """The tensors of one split written by `write_splits`, checked to hold `names`."""
    return read_tensors(Path(folder) / f"{split}.safetensors", names)


def read_meta(folder: str | Path) -> Any:
    return read_json(Path(folder) / "meta.json")
