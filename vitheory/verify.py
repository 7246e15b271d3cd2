"""Check the results in the repository without rerunning the pipeline.

    python -m vitheory.verify

1. The workspace matches dvc.lock: every stage's deps (code, params, data) and outputs hash as
   recorded (`dvc status` is empty).
2. The summary metrics follow from the raw tables: the LI-3 metrics from the logged series, the
   phase fits from the per-run CSVs (bootstrap included), the sparsification means from its runs.
3. Every claim is re-derived from those artifacts by its own check (vitheory.claims) and compared
   with the verdict stored in reports/claims.json.

Prints one table (claim, measured, threshold, verdict, agrees with stored) and every problem by
name. Exit code 0: everything matches and every claim holds; 1: everything matches but some claim
does not hold; 2: a mismatch or a missing or unreadable artifact.
"""

from __future__ import annotations

import csv
import math
import sys
from collections.abc import Callable
from pathlib import Path
from statistics import mean
from typing import Any

from vitheory.artifacts import read_json
from vitheory.claims import CLAIMS, evaluate
from vitheory.errors import VitheoryError
from vitheory.params import load_params
from vitheory.phase import read_runs, summarize

REPORTS = Path("reports")


def same(a: Any, b: Any) -> bool:
    """Equal structures, floats equal to 1e-9 relative (JSON keeps them exactly; this allows for
    a different summation order on another machine)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-9)
    return a == b


def lock_problems(root: Path) -> list[str]:
    from dvc.repo import Repo  # imported here: DVC is slow to import and only this check needs it

    status = Repo(str(root)).status()
    return [f"dvc.lock: stage {stage} is out of date ({changes}); run `dvc repro` or `dvc checkout`"
            for stage, changes in status.items()]


def _li_vit(reports: Path) -> list[str]:
    stored = read_json(reports / "metrics" / "li_vit.json", "train_li_vit")
    logged: dict[int, dict[str, dict[str, float]]] = {}
    with open(reports / "history" / "li_vit.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            logged.setdefault(int(row["step"]), {}).setdefault(row["split"], {})[row["metric"]] = float(row["value"])
    derived = {"initial": logged.get(0), "final": logged.get(stored["steps"])}
    return [] if same(derived, {k: stored[k] for k in derived}) else [
        "reports/metrics/li_vit.json: initial/final values differ from reports/history/li_vit.csv"]


def _phase(reports: Path) -> list[str]:
    fit = load_params().phase.fit
    stored = read_json(reports / "metrics" / "phase.json", "phase_fit")["models"]
    return [f"reports/metrics/phase.json: model {model} differs from a refit of reports/phase/{model}.csv"
            for model in stored
            if not same(summarize(read_runs(reports / "phase" / f"{model}.csv"), fit.success_rate,
                                  fit.bootstrap, fit.seed), stored[model])]


def _sparsify(reports: Path) -> list[str]:
    stored = read_json(reports / "metrics" / "sparsify.json", "sparsify")["mean_test_loss"]
    losses: dict[str, list[float]] = {}
    with open(reports / "sparsify" / "runs.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            losses.setdefault(row["strategy"], []).append(float(row["test_loss"]))
    return [] if same({s: mean(v) for s, v in losses.items()}, stored) else [
        "reports/metrics/sparsify.json: means differ from reports/sparsify/runs.csv"]


SUMMARY_CHECKS: tuple[Callable[[Path], list[str]], ...] = (_li_vit, _phase, _sparsify)


def verify(root: Path = Path(".")) -> tuple[list[dict[str, Any]], list[str]]:
    """(one row per claim, problems). A problem is a one-line description naming the artifact."""
    reports = root / REPORTS
    problems = lock_problems(root)
    for check in SUMMARY_CHECKS:
        try:
            problems += check(reports)
        except (VitheoryError, OSError, KeyError, ValueError) as err:
            problems.append(f"{check.__name__.strip('_')}: {err}")
    try:
        stored = {c["id"]: c for c in read_json(reports / "claims.json", "report")["claims"]}
    except VitheoryError as err:
        return [], problems + [str(err)]
    rows = []
    for claim in CLAIMS:
        try:
            record = evaluate(claim, reports)
        except (VitheoryError, KeyError) as err:
            problems.append(f"{claim.id}: cannot be measured: {err}")
            continue
        agrees = claim.id in stored and same(record, stored[claim.id])
        if not agrees:
            problems.append(f"{claim.id}: reports/claims.json does not match the artifacts; run `dvc repro report`")
        rows.append({"claim": claim.id, "record": record, "agrees": agrees})
    return rows, problems


def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'claim':6} {'verdict':15} {'stored':7} measured (threshold)"]
    for row in rows:
        record = row["record"]
        parts = ", ".join(f"{q} = {_fmt(record['measured'][q])} ({t})" for q, t in record["threshold"].items())
        verdict = "holds" if record["holds"] else "does not hold"
        lines.append(f"{row['claim']:6} {verdict:15} {'agrees' if row['agrees'] else 'DIFFERS':7} {parts}")
    return "\n".join(lines)


def main() -> int:
    rows, problems = verify()
    print(_table(rows))
    for problem in problems:
        print(f"problem: {problem}")
    if problems:
        return 2
    failed = [row["claim"] for row in rows if not row["record"]["holds"]]
    if failed:
        print(f"verified; claims that do not hold: {', '.join(failed)}")
        return 1
    print("verified; every claim holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
