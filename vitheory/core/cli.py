"""What every stage script shares: parse its arguments (a matrix stage's run), validate params first,
and turn expected failures into one line."""

from __future__ import annotations

import argparse
import errno
import json
import os
import shlex
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vitheory.core.config import ParamsView, read_params_file, view
from vitheory.core.errors import ParamsError, VitheoryError
from vitheory.core.paths import outputs, stages
from vitheory.core.processes import stage_lock

PARAMS_FILE = Path("params.yaml")
TIMINGS = Path("reports/timings")
LOAD_SAMPLE_SECONDS = 10  # how often a running stage samples the machine's load for its timing record
# what a user can fix in the machine rather than in the project: said in one line, not a traceback
ENVIRONMENT_FAULTS = {errno.ENOSPC: "free some space", errno.EDQUOT: "free some space or raise the quota",
                      errno.EACCES: "make it writable", errno.EPERM: "make it writable",
                      errno.EROFS: "run from a writable copy"}


def run_stage(main: Callable[[ParamsView, argparse.Namespace], None], parser: argparse.ArgumentParser,
              declared: Mapping[str, Any]) -> None:
    """Parse the stage's arguments, validate the params its dvc.yaml entry lists, then run
    `main(params, args)`. `declared` maps the params keys the stage may read to their section class or
    type; `params` holds the listed keys alone (vitheory.core.config.view), so a stage imports only its
    own paper's params module. Artifact paths are not arguments: the package reads them from dvc.yaml
    (vitheory.core.paths).

    The stage holds its lock for the whole run (vitheory.core.processes.stage_lock): a second run of
    it stops at once. A bad param, a missing or corrupt artifact, a diverging run, a stage already
    running, or a full or read-only disk exits with code 2 and one `error:` line on stderr instead of
    a traceback; it never leaves a half-written artifact (every write is atomic).
    """
    args = parser.parse_args()
    start = time.perf_counter()
    name, entry = _stage_entry(Path(sys.argv[0]).stem, sys.argv[1:])
    try:
        with stage_lock(name, outputs(entry)[0] if entry else "its outputs"), sampled_load() as loads:
            main(_params(declared, entry, name), args)
    except VitheoryError as err:
        _fail(str(err))
    except OSError as err:
        if err.errno not in ENVIRONMENT_FAULTS:
            raise
        _fail(f"cannot write {err.filename or 'an output'}: {err.strerror}; {ENVIRONMENT_FAULTS[err.errno]} "
              f"and rerun (nothing half-written was left)")
    log_timing(Path(sys.argv[0]).stem, name, time.perf_counter() - start, loads)


@contextmanager
def sampled_load() -> Iterator[list[float]]:
    """The machine's 1-minute load average, sampled as the block starts and every LOAD_SAMPLE_SECONDS
    while it runs: a stage's time is a cost only when nothing else loaded its cores."""
    samples = [os.getloadavg()[0]]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(LOAD_SAMPLE_SECONDS):
            samples.append(os.getloadavg()[0])

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield samples
    finally:
        stop.set()
        sampler.join()


def _fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def _stage_entry(script: str, argv: list[str]) -> tuple[str, dict[str, Any] | None]:
    """dvc.yaml's name of the stage this command runs (`train_real@cnn-natural`) and its entry (None when
    dvc.yaml has no stage with this command)."""
    command = shlex.join(["python", "-m", f"stages.{script}", *argv])
    for name, stage in stages().items():
        if stage["cmd"] == command:
            return name, stage
    return " ".join([script, *argv]), None


def _params(declared: Mapping[str, Any], entry: dict[str, Any] | None, name: str) -> ParamsView:
    """The stage's view of params.yaml; a bad value's error names the file, as `python -m vitheory.params` does."""
    raw = read_params_file(PARAMS_FILE)  # its errors name the file already
    try:
        return view(raw, declared, _listed(entry, declared), f"stage {name}")
    except ParamsError as err:
        raise ParamsError(f"{PARAMS_FILE}: {err}") from None


def _listed(entry: dict[str, Any] | None, declared: Mapping[str, Any]) -> list[str]:
    """The params keys a stage's dvc.yaml entry lists; every declared one when it lists a whole file (DVC
    then tracks every value) or when the command is run outside dvc.yaml."""
    if entry is None:
        return list(declared)
    keys = entry.get("params", [])
    return list(declared) if any(isinstance(key, dict) for key in keys) else list(keys)


def log_timing(script: str, stage: str, seconds: float, loads: list[float]) -> None:
    """Append the run's wall-clock time, with the load average sampled while it ran (`loads`: at its
    start, then every LOAD_SAMPLE_SECONDS), to reports/timings/<script>.jsonl under dvc.yaml's name of
    the stage (`train_real@cnn-natural`): git-ignored and no DVC output, so that tracked outputs hold no
    wall-clock value and stay byte-identical from run to run; the reviewer's guide reads it."""
    TIMINGS.mkdir(parents=True, exist_ok=True)
    record = {"finished": datetime.now(UTC).isoformat(timespec="seconds"), "seconds": round(seconds, 1),
              "stage": stage, "cores": os.cpu_count(),
              "load": {"start": round(loads[0], 2), "mean": round(sum(loads) / len(loads), 2),
                       "max": round(max(loads), 2)}}
    with open(TIMINGS / f"{script}.jsonl", "a") as handle:
        handle.write(json.dumps(record) + "\n")
