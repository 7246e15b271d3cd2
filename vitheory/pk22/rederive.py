"""[PK22] summaries re-derived from their tables, for `python -m vitheory.verify`."""

from __future__ import annotations

from pathlib import Path

from vitheory.core.artifacts import read_json, read_rows
from vitheory.core.paths import artifact
from vitheory.core.rederive import agrees
from vitheory.pk22 import trainings
from vitheory.pk22.tables import TABLES, summarize, table_path


def pk_train(root: Path) -> list[str]:
    path = artifact("pk_train_metrics")
    derived = trainings.training_summary(read_rows(root / artifact("pk_train_runs"), trainings.COLUMNS))
    return agrees(derived, read_json(root / path), path, f"differs from {artifact('pk_train_runs')}")


def pk_analysis(root: Path) -> list[str]:
    path = artifact("pk_metrics")
    derived = summarize(*(read_rows(root / table_path(name), columns) for name, columns in TABLES.items()))
    return agrees(derived, read_json(root / path), path, f"differs from the tables in {artifact('pk_tables')}")


CHECKS = (pk_train, pk_analysis)
