"""The measured cost of each command the README quotes: docs/measured.yaml, one entry per measurement,
each with the commit it was measured at, the machine, the load beside it and the day. The README's
first-screen cost table is generated from it (vitheory.reviewing), and tests/test_prose_numbers.py
checks every time the README and docs/ quote against it or against the committed run's stage times.

A new measurement replaces its entry (same id) or adds one; the history of earlier measurements is
docs/HISTORY.md's."""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, fields
from pathlib import Path

import yaml

from vitheory.core.errors import ArtifactError

MEASURED = Path("docs/measured.yaml")
COMMIT = re.compile(r"[0-9a-f]{7,40}")


@dataclass(frozen=True)
class Measurement:
    """One command's measured wall clock."""
    id: str  # what the README's prose and tests name it by
    command: str
    seconds: float
    commit: str  # the commit whose checkout ran the command
    machine: str
    load: str  # the load average beside it, or why it is not known
    date: str  # the day it was measured, ISO 8601
    note: str  # what else the number includes or leaves out (fresh clone, install, test counts)


def _checked(number: int, entry: object) -> Measurement:
    """One entry as a Measurement, or a one-line error naming the entry and the key."""
    where = f"{MEASURED}: entry {number}"
    if not isinstance(entry, dict):
        raise ArtifactError(f"{where} is not a mapping of keys; write `- id: ...` with the keys of Measurement")
    where += f" ({entry.get('id', 'no id')})"
    names = [field.name for field in fields(Measurement)]
    missing, unknown = [n for n in names if n not in entry], [k for k in entry if k not in names]
    if missing or unknown:
        raise ArtifactError(f"{where}: missing {missing or 'nothing'}, unknown {unknown or 'nothing'}; "
                            f"the keys are {', '.join(names)}")
    if isinstance(entry["seconds"], bool) or not isinstance(entry["seconds"], (int, float)) or entry["seconds"] <= 0:
        raise ArtifactError(f"{where}: seconds {entry['seconds']!r} is not a positive number")
    if not COMMIT.fullmatch(str(entry["commit"])):
        raise ArtifactError(f"{where}: commit {entry['commit']!r} is not 7 to 40 lowercase hex digits")
    try:
        datetime.date.fromisoformat(str(entry["date"]))
    except ValueError:
        raise ArtifactError(f"{where}: date {entry['date']!r} is not YYYY-MM-DD") from None
    empty = [name for name in names if name != "seconds" and not str(entry[name]).strip()]
    if empty:
        raise ArtifactError(f"{where}: {', '.join(empty)} empty; say what was measured (or 'not recorded')")
    return Measurement(**{name: entry[name] if name == "seconds" else str(entry[name]) for name in names})


def load_measured(text: str) -> list[Measurement]:
    """docs/measured.yaml's entries, validated; ids unique."""
    try:
        entries = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ArtifactError(f"{MEASURED}: not valid YAML ({str(err).splitlines()[0]})") from None
    if not isinstance(entries, list):
        raise ArtifactError(f"{MEASURED}: not a list of measurements; each entry begins `- id:`")
    measured = [_checked(number, entry) for number, entry in enumerate(entries, 1)]
    ids = [m.id for m in measured]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ArtifactError(f"{MEASURED}: id {', '.join(repeated)} appears more than once; keep the latest")
    return measured


def duration(seconds: float) -> str:
    """Seconds as the docs write them: `45 s`, `13 min 11 s`, `6 h 15 min`."""
    whole = round(seconds)
    if whole < 100:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {round(whole % 3600 / 60)} min"
