"""Check the results in the repository without rerunning the pipeline.

    python -m vitheory.verify

1. The workspace matches dvc.lock: every stage's deps (code, params, data) and outputs hash as
   recorded (`dvc status` is empty).
2. The summary metrics that the claims read follow from the raw artifacts: the LI-3 and JSL-1/2
   metrics from the logged series; the phase fits (bootstrap included), the sparsification means,
   the samples needed for transfer, LI-5's accuracies and every [PK22] summary from the per-run
   CSVs; the JSL-2 association from the positional encodings in the checkpoints; every train_real
   accuracy by evaluating its checkpoint on the test images again. (JSL-3's control stage keeps no
   per-run table or checkpoint: its claim is read from its metrics alone.)
3. Every claim is re-derived from those artifacts by its own check (vitheory.claims) and compared
   with the verdict stored in reports/claims.json.

Prints one table (claim, measured, threshold, verdict, agrees with stored) and every problem by
name. Exit code 0: everything matches and every claim holds; 1: everything matches but some claim
does not hold; 2: a mismatch or a missing or unreadable artifact.
"""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from vitheory import jsl, pk, real, real_sparsify, schemas, spatial
from vitheory.artifacts import read_json, read_table
from vitheory.checkpoint import load_checkpoint
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


def _differs(path: str, what: str, stage: str) -> list[str]:
    """A summary that its own raw artifacts do not reproduce: only rerunning its stage mends it."""
    return [f"{path}: {what}; run `dvc repro -f {stage}` to rebuild it"]


def _rows(path: Path, stage: str, columns: dict[str, type]) -> list[tuple]:
    return [tuple(row.values()) for row in read_table(path, stage, columns)]


def _li_vit(root: Path) -> list[str]:
    stored = read_json(root / "reports/metrics/li_vit.json", "train_li_vit")
    logged: dict[int, dict[str, dict[str, float]]] = {}
    for row in read_table(root / "reports/history/li_vit.csv", "train_li_vit", schemas.HISTORY):
        logged.setdefault(row["step"], {}).setdefault(row["split"], {})[row["metric"]] = row["value"]
    derived = {"initial": logged.get(0), "final": logged.get(stored["steps"])}
    return [] if same(derived, {k: stored[k] for k in derived}) else _differs(
        "reports/metrics/li_vit.json", "initial/final values differ from reports/history/li_vit.csv",
        "train_li_vit")


def _phase(root: Path) -> list[str]:
    fit = load_params(root / "params.yaml").phase.fit
    stored = read_json(root / "reports/metrics/phase.json", "phase_fit")["models"]
    return [problem for model in stored
            if not same(summarize(read_runs(root / f"reports/phase/{model}.csv"), fit.success_rate, fit.bootstrap,
                                  fit.seed), stored[model])
            for problem in _differs("reports/metrics/phase.json", f"model {model} differs from a refit of "
                                    f"reports/phase/{model}.csv", "phase_fit")]


def _sparsify(root: Path) -> list[str]:
    stored = read_json(root / "reports/metrics/sparsify.json", "sparsify")["mean_test_loss"]
    losses: dict[str, list[float]] = {}
    for row in read_table(root / "reports/sparsify/runs.csv", "sparsify", schemas.SPARSIFY_RUNS):
        losses.setdefault(row["strategy"], []).append(row["test_loss"])
    return [] if same({s: statistics.mean(v) for s, v in losses.items()}, stored) else _differs(
        "reports/metrics/sparsify.json", "means differ from reports/sparsify/runs.csv", "sparsify")


def _spatial(root: Path) -> list[str]:
    """JSL-1, JSL-2: the ViT's medians from its logged series, and the association once more from the
    positional encodings in its checkpoints."""
    stored = read_json(root / "reports/metrics/spatial.json", "train_spatial")
    series: dict[int, dict[int, dict[str, float]]] = {}
    for row in read_table(root / "reports/history/spatial.csv", "train_spatial", schemas.HISTORY):
        if row["model"] == stored["score_form"]:
            series.setdefault(row["step"], {}).setdefault(row["seed"], {})[row["metric"]] = row["value"]
    last = max(series)
    derived = {moment: jsl.summarize([series[step][seed] for seed in sorted(series[step])])
               for moment, step in (("initial", 0), ("final", last))}
    problems = [] if same(derived, stored["vit"]) else _differs(
        "reports/metrics/spatial.json", "the ViT's medians differ from reports/history/spatial.csv",
        "train_spatial")
    sets = spatial.load(root / "data/spatial", "structure", ("sets",))["sets"]
    exact = []
    for seed in range(stored["seeds"]):
        P = load_checkpoint(root / f"models/spatial/vit/seed_{seed}", "train_spatial").P.detach()
        exact.append(spatial.association(P @ P.T, sets)["exact"])
    if not same(statistics.median(exact), stored["vit"]["final"]["pos_exact_median"]):
        problems += _differs("reports/metrics/spatial.json", "the association differs from that of the "
                             "checkpoints in models/spatial/vit", "train_spatial")
    return problems


def _transfer(root: Path) -> list[str]:
    stored = read_json(root / "reports/metrics/transfer.json", "transfer")
    runs = _rows(root / "reports/transfer/runs.csv", "transfer", schemas.TRANSFER_RUNS)
    derived = {f"{method}_n_needed": jsl.samples_needed(runs, method, stored["target_error"])
               for method in ("finetune", "scratch")} | {"diverged_runs": sum(run[-1] for run in runs)}
    return [] if same(derived, {k: stored[k] for k in derived}) else _differs(
        "reports/metrics/transfer.json", "samples needed differ from reports/transfer/runs.csv",
        "transfer")


def _train_real(root: Path) -> list[str]:
    """JSL-5, JSL-6: every checkpoint evaluated again on the test images, and the summaries from its runs."""
    test = real.load_images(root / "data/images", ("test",), torch.device("cpu"))
    problems = []
    for path in sorted((root / "reports/real").glob("*.json")):
        stored = read_json(path, "train_real")
        stage = f"train_real@{stored['model']}-{stored['pixels']}"
        accuracies = []
        for key, run in sorted(stored["runs"].items()):
            folder = root / "models/real" / f"{stored['model']}_{stored['pixels']}" / key
            model = load_checkpoint(folder, stage)
            permutation = read_json(folder / "config.json", stage)["metadata"]["permutation"]
            x = real.permute_pixels(test.x["test"], None if permutation is None else torch.tensor(permutation))
            accuracy = real.evaluate(model, x, test.y["test"])["accuracy"]
            if not same(accuracy, run["test_accuracy"]):
                problems += _differs(str(path.relative_to(root)), f"{key}'s test accuracy {run['test_accuracy']:.4f} "
                                     f"differs from its checkpoint's, {accuracy:.4f}", stage)
            accuracies.append(run["test_accuracy"])
        derived = {"test_accuracy_mean": statistics.mean(accuracies), "test_accuracy_min": min(accuracies),
                   "test_accuracy_max": max(accuracies),
                   "test_accuracy_std": statistics.stdev(accuracies) if len(accuracies) > 1 else 0.0}
        if not same(derived, {k: stored[k] for k in derived}):
            problems += _differs(str(path.relative_to(root)), "the summary differs from its runs", stage)
    return problems


def _sparsify_real(root: Path) -> list[str]:
    stored = read_json(root / "reports/metrics/sparsify_real.json", "sparsify_real")
    rows = _rows(root / "reports/sparsify_real/runs.csv", "sparsify_real", schemas.SPARSIFY_REAL_RUNS)
    derived = real_sparsify.summarize(rows, stored["patches"], stored["half"])
    return [] if same(derived, {k: stored[k] for k in derived}) else _differs(
        "reports/metrics/sparsify_real.json", "differs from reports/sparsify_real/runs.csv",
        "sparsify_real")


def _pk_train(root: Path) -> list[str]:
    stored = read_json(root / "reports/metrics/pk_train.json", "pk_train")
    derived = pk.training_summary(_rows(root / "reports/pk_train/runs.csv", "pk_train", schemas.PK_TRAIN_RUNS))
    return [] if same(derived, {k: v for k, v in stored.items() if k != "device"}) else _differs(
        "reports/metrics/pk_train.json", "differs from reports/pk_train/runs.csv", "pk_train")


def _pk(root: Path) -> list[str]:
    stored = read_json(root / "reports/metrics/pk.json", "pk_analysis")
    tables = [_rows(root / f"reports/pk/{name}.csv", "pk_analysis", columns) for name, columns in
              (("profiles", schemas.PK_PROFILES), ("noise", schemas.PK_NOISE), ("hessian", schemas.PK_HESSIAN))]
    return [] if same(pk.summarize(*tables), {k: v for k, v in stored.items() if k != "device"}) else _differs(
        "reports/metrics/pk.json", "differs from reports/pk/{profiles,noise,hessian}.csv", "pk_analysis")


# Each re-derives one stage's summary metrics (which the claims read) from its raw tables or checkpoints.
SUMMARY_CHECKS: tuple[Callable[[Path], list[str]], ...] = (
    _li_vit, _phase, _sparsify, _spatial, _transfer, _train_real, _sparsify_real, _pk_train, _pk)


def verify(root: Path = Path(".")) -> tuple[list[dict[str, Any]], list[str]]:
    """(one row per claim, problems). A problem is a one-line description naming the artifact."""
    reports = root / REPORTS
    problems = lock_problems(root)
    for check in SUMMARY_CHECKS:
        try:
            problems += check(root)
        except VitheoryError as err:  # already names the file and the stage to rerun
            problems.append(str(err))
        except (OSError, KeyError, ValueError, TypeError) as err:
            problems.append(f"{check.__name__.strip('_')}: an artifact lacks what it should hold ({err!r}); "
                            f"run `dvc repro`")
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
