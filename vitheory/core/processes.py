"""Processes that cannot outlive or race the stage they belong to.

- `worker_pool`: spawn workers that die with the process that started them (on Linux a parent-death
  signal armed as each worker starts) and never write once orphaned (`exit_if_orphaned`, called
  before every write: the portable fallback).
- `stage_lock`: one writer per stage. A stage holds an exclusive lock for its whole run; a second run
  of the same stage stops at once with one line. Its workers hold the lock's companion shared while
  they write, so a new holder first waits out any write a dead holder's worker had begun. The kernel
  drops a lock when its holder dies, so a lock left by a killed run is no obstacle.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import re
import signal
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from multiprocessing import get_context
from pathlib import Path

from vitheory.core.errors import StageBusy

LOCKS = Path(".vitheory/locks")  # git-ignored; relative to the repository root, where stages run
WRITERS_ENV = "VITHEORY_WRITERS_LOCK"  # inherited by spawned workers: the file they hold while writing
_PR_SET_PDEATHSIG = 1
_parent: int | None = None  # in a worker: the pid of the process that started it


def _die_with_parent(parent: int) -> None:
    global _parent
    _parent = parent
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    exit_if_orphaned()  # the parent may have died before the signal was armed


def exit_if_orphaned() -> None:
    """In a worker whose parent has died: exit at once, writing nothing. Elsewhere: nothing."""
    if _parent is not None and os.getppid() != _parent:
        os._exit(1)


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of `workers` spawned processes (torch and fork don't mix) that die with this one."""
    return ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=_die_with_parent,
                               initargs=(os.getpid(),))


@contextmanager
def writing() -> Iterator[None]:
    """Around one write: hold the running stage's writers lock shared (when a stage runs), then make
    sure this process is not an orphan."""
    path = os.environ.get(WRITERS_ENV)
    if path is None:
        exit_if_orphaned()
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_SH)
        exit_if_orphaned()
        yield


@contextmanager
def stage_lock(stage: str, folder: str) -> Iterator[None]:
    """Hold `stage`'s lock for the block; raises StageBusy naming the holder's pid if another process holds it."""
    LOCKS.mkdir(parents=True, exist_ok=True)
    path = LOCKS / (re.sub(r"[^\w@.-]", "_", stage) + ".lock")
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise StageBusy(f"stage {stage} is already running (pid {holder} writes {folder}); wait for it to "
                            f"end or stop it, then rerun") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        writers = path.with_suffix(".writers")
        with open(writers, "a") as wait:  # a dead holder's worker may still be finishing a write
            fcntl.flock(wait, fcntl.LOCK_EX)
        os.environ[WRITERS_ENV] = str(writers.resolve())
        try:
            yield
        finally:
            del os.environ[WRITERS_ENV]
