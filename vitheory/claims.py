"""The papers' claims as checks: what each claim says, which numbers measure it, and the thresholds.

A verdict is never written by hand: `evaluate` reads the numbers from the pipeline's artifacts and
compares them with the thresholds. Thresholds belong to the claim's definition, not to
params.yaml: they do not move to fit a run. When a claim fails, the report says so with the number.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from vitheory.artifacts import read_json

OPERATORS = {">=": operator.ge, "<=": operator.le}


@dataclass(frozen=True)
class Criterion:
    """`measured[quantity] <op> threshold` must hold."""

    quantity: str
    op: Literal[">=", "<="]
    threshold: float

    def holds(self, measured: dict[str, float]) -> bool:
        return bool(OPERATORS[self.op](measured[self.quantity], self.threshold))

    def __str__(self) -> str:
        return f"{self.quantity} {self.op} {self.threshold:g}"


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str
    statement: str
    metric: str
    criteria: tuple[Criterion, ...]
    evidence: tuple[str, ...]  # artifact paths relative to the reports folder
    measure: Callable[[Path], dict[str, float]]  # reads artifacts under the reports folder


def _measure_li3(reports: Path) -> dict[str, float]:
    metrics = read_json(reports / "metrics" / "li_vit.json", "train_li_vit")
    initial, final = metrics["initial"]["test"], metrics["final"]["test"]
    reference = metrics["reference"]
    return {
        "initial": initial["attn_relevant_query"],
        "final": final["attn_relevant_query"],
        "final_over_initial": final["attn_relevant_query"] / initial["attn_relevant_query"],
        "uniform": reference["uniform"],
        "initial_over_uniform": initial["attn_relevant_query"] / reference["uniform"],
        "all_query_initial": initial["attn_all_query"],
        "all_query_final": final["attn_all_query"],
        "all_query_cap": reference["all_query_cap"],
        "test_error_final": final["error"],
    }


CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="LI-3",
        paper="LI23",
        statement=("SGD concentrates attention on label-relevant tokens: the attention mass that "
                   "label-relevant queries put on label-relevant tokens rises from about its uniform "
                   "value towards 1 during training."),
        metric=("mean over label-relevant query tokens of the test set of their attention mass on "
                "label-relevant tokens, at initialisation and after training"),
        criteria=(Criterion("final", ">=", 0.9), Criterion("final_over_initial", ">=", 3.0),
                  Criterion("initial_over_uniform", "<=", 1.5)),
        evidence=("figures/li_vit_attention.png", "figures/li_vit_training.png", "metrics/li_vit.json"),
        measure=_measure_li3,
    ),
)


def evaluate(claim: Claim, reports: Path) -> dict[str, Any]:
    """The claim's record for claims.json, its verdict computed from the measured numbers."""
    measured = claim.measure(reports)
    return {
        "id": claim.id,
        "paper": claim.paper,
        "statement": claim.statement,
        "metric": claim.metric,
        "measured": measured,
        "threshold": {c.quantity: f"{c.op} {c.threshold:g}" for c in claim.criteria},
        "holds": all(c.holds(measured) for c in claim.criteria),
        "evidence": list(claim.evidence),
    }


def evaluate_all(reports: Path) -> list[dict[str, Any]]:
    return [evaluate(claim, reports) for claim in CLAIMS]
