"""Logged series: a long-form table with one row per (step, split, metric), as seaborn and the claim
checks read them, and the DVCLive steps that `dvc exp show` and `dvc plots` read."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vitheory.core.artifacts import atomic_path, write_table

if TYPE_CHECKING:
    from dvclive import Live

COLUMNS = {"model": str, "seed": int, "step": int, "split": str, "metric": str, "value": float}


class History:
    """Rows of `COLUMNS` for one training run."""

    def __init__(self, *, model: str, seed: int):
        self.model, self.seed = model, seed
        self.rows: list[tuple] = []

    def add(self, step: int, metrics: dict[str, dict[str, float]]) -> None:
        """`metrics` maps a split (train, test) to that split's named values at `step`."""
        for split, values in metrics.items():
            for metric, value in values.items():
                self.rows.append((self.model, self.seed, step, split, metric, value))

    def at_step(self, step: int) -> dict[str, dict[str, float]]:
        found: dict[str, dict[str, float]] = {}
        for _, _, row_step, split, metric, value in self.rows:
            if row_step == step:
                found.setdefault(split, {})[metric] = value
        if not found:
            raise KeyError(f"no values logged at step {step}")
        return found

    def write(self, path: str | Path) -> None:
        write_histories(path, [self])


def write_histories(path: str | Path, histories: Sequence[History]) -> None:
    """One table of the rows of several runs (models, seeds)."""
    write_table(path, COLUMNS, (row for history in histories for row in history.rows))


def log_step(live: Any, step: int, metrics: Mapping[str, float]) -> None:
    """One step of a `dvclive.Live`: every metric at `step`, in the order given."""
    live.step = step
    for name, value in metrics.items():
        live.log_metric(name, value)
    live.next_step()


@contextmanager
def live_run(folder: str | Path) -> Iterator[Live]:
    """A DVCLive run writing into `folder`, which it replaces whole once the run ends without error."""
    from dvclive import Live  # noqa: PLC0415 - with pandas, 0.3 s that only the logging stages need

    with atomic_path(folder) as tmp, Live(str(tmp), dvcyaml=False, save_dvc_exp=False) as live:
        yield live
