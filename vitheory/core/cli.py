"""What every stage script shares: parse its arguments (a matrix stage's run), validate params first,
and turn expected failures into one line."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from vitheory.core.errors import VitheoryError
from vitheory.params import DEFAULT_PATH, Params, load_params

TIMINGS = Path("reports/timings")


def run_stage(main: Callable[[Params, argparse.Namespace], None], parser: argparse.ArgumentParser) -> None:
    """Parse the stage's arguments, validate the whole params file, then run `main(params, args)`.
    Artifact paths are not arguments: the package reads them from dvc.yaml (vitheory.core.paths).

    A bad param, a missing or corrupt artifact, or a diverging run exits with code 2 and one
    `error:` line on stderr instead of a traceback, before `main` writes any output.
    """
    args = parser.parse_args()
    start = time.perf_counter()
    try:
        main(load_params(DEFAULT_PATH), args)
    except VitheoryError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    log_timing(Path(sys.argv[0]).stem, sys.argv[1:], time.perf_counter() - start)


def log_timing(stage: str, argv: list[str], seconds: float) -> None:
    """Append the run's wall-clock time to reports/timings/<stage>.jsonl: git-ignored and no DVC output,
    so that tracked outputs hold no wall-clock value and stay byte-identical from run to run."""
    TIMINGS.mkdir(parents=True, exist_ok=True)
    record = {"finished": datetime.now(UTC).isoformat(timespec="seconds"), "seconds": round(seconds, 1),
              "argv": argv}
    with open(TIMINGS / f"{stage}.jsonl", "a") as handle:
        handle.write(json.dumps(record) + "\n")
