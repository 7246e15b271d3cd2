"""What the papers' verdict tables share (tests/<paper>/test_verdict_table.py).

A row plants one claim's artifacts in a temporary root, with the project's own writers, and names the
verdict `evaluate` (the path the report takes) must give it. Each paper's table holds, for every claim,
rows that make it hold, not hold and be inconclusive, and a row per condition planted unmet
(`missing_rows` says what a table lacks), so adding a claim adds rows, not files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from vitheory.core.claims import FAILS, HOLDS, INCONCLUSIVE, Paper, claim_verdict, evaluate
from vitheory.core.intervals import IntervalSettings

# ours: 8 seeds, so that every kind can decide both ways: a paired sign-flip test's smallest one-sided p is
# 1/2^8 < 2.5% (at 5 seeds 1/32 is not), and a Clopper-Pearson share of 8 settles against 0.5 at 0/8 and 8/8
SEEDS = 8
# the report's confidence; 100 resamples (params.yaml's least) keep a step statistic's bootstrap fast
SETTINGS = IntervalSettings(confidence=0.95, bootstrap=100, seed=0)
OUTCOMES = (HOLDS, FAILS, INCONCLUSIVE)


@dataclass(frozen=True)
class Row:
    """`build(root)` writes the artifacts `claim`'s samples read; `verdict` is what `evaluate` must say.
    `unmet` names a condition's quantity planted unmet; `criteria` is the verdict the criteria alone give
    (with `unmet`: planted failing where they can, so that the condition must win over them)."""

    claim: str
    build: Callable[[Path], None]
    verdict: str
    why: str
    unmet: str | None = None
    criteria: str | None = None


def params(rows: Sequence[Row]) -> list[Any]:
    return [pytest.param(row, id=f"{row.claim} {row.verdict}: {row.why}") for row in rows]


def per_seed(value: Any, seeds: int = SEEDS) -> list[Any]:
    """One value per seed: a list as given (its length the seeds'), a scalar repeated."""
    return list(value) if isinstance(value, (list, tuple)) else [value] * seeds


def wiggle(seed: int, k: int = 0, size: float = 0.005) -> float:
    """A deterministic spread in [-size, size] over seeds (k varies it between quantities), so that intervals
    have a width without deciding anything a row does not plant."""
    return size * (((5 * seed + 3 * k) % 7) - 3) / 3


def check(paper: Paper, row: Row, root: Path) -> dict[str, Any]:
    """Plant the row, judge its claim through `evaluate`, and check the verdict and what it rests on."""
    claim = next(c for c in paper.claims if c.id == row.claim)
    row.build(root)
    record = evaluate(claim, paper.key, root, SETTINGS)
    criteria = {name: check["verdict"] for name, check in record["criteria"].items()}
    conditions = {name: check["verdict"] for name, check in record["conditions"].items()}
    assert record["verdict"] == row.verdict, (row.why, criteria, conditions, record["measured"])
    if row.criteria is not None:
        assert claim_verdict(list(criteria.values())) == row.criteria, (row.why, criteria)
    if row.unmet is None:
        assert all(v == HOLDS for v in conditions.values()), (row.why, conditions)
    else:
        unmet = [judged["verdict"] for judged in record["conditions"].values() if judged["quantity"] == row.unmet]
        assert unmet and unmet[0] != HOLDS, (row.why, conditions)
    return record


def missing_rows(paper: Paper, rows: Sequence[Row]) -> list[str]:
    """What the table lacks: each claim's three outcomes (its inconclusive one with every condition met) and
    each condition planted unmet; and rows naming no claim of the paper."""
    ids = {claim.id for claim in paper.claims}
    missing = [f"a row names {row.claim}, no claim of {paper.key}" for row in rows if row.claim not in ids]
    for claim in paper.claims:
        mine = [row for row in rows if row.claim == claim.id]
        met = {row.verdict for row in mine if row.unmet is None}
        missing += [f"{claim.id}: no row where it {outcome if outcome != INCONCLUSIVE else 'is inconclusive'}"
                    for outcome in OUTCOMES if outcome not in met]
        planted = {row.unmet for row in mine}
        missing += [f"{claim.id}: condition {c} never planted unmet" for c in claim.conditions
                    if c.quantity not in planted]
    return missing
