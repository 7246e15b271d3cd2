"""Logged series as a long-form table: one row per (step, split, metric), as seaborn and the claim
checks read them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vitheory.artifacts import write_table
from vitheory.schemas import HISTORY as COLUMNS


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
