"""A claim's units from a table's rows: one unit per seed, in seed order, grouped by a column (the model)
where a table holds several groups. Every paper's claims read their tables through these, so that what
a unit is (a seed's rows, never a row) is said once."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

Row = Mapping[str, Any]


def split(rows: Iterable[Row], column: str) -> dict[Any, list[Row]]:
    """Each value of `column`, in the order the rows first have it, to its rows in their order."""
    found: dict[Any, list[Row]] = {}
    for row in rows:
        found.setdefault(row[column], []).append(row)
    return found


def seed_units(rows: Iterable[Row], unit: Callable[[list[Row]], Any] = list) -> list[Any]:
    """One unit per seed, in seed order: `unit` of the seed's rows (a list of them by default)."""
    return [unit(seed_rows) for _, seed_rows in sorted(split(rows, "seed").items())]


def grouped_units(rows: Iterable[Row], group: str, unit: Callable[[list[Row]], Any] = list) -> dict[Any, list[Any]]:
    """Each value of column `group` (in the order the rows first have it: the order of the claim's groups)
    to its seeds' units, as `seed_units`."""
    return {value: seed_units(group_rows, unit) for value, group_rows in split(rows, group).items()}
