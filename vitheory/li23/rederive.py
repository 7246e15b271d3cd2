"""[LI23] summaries re-derived from raw artifacts, for `python -m vitheory.verify`: LI-3's from its
logged series, the phase fits (bootstrap included), and both sparsification summaries from their runs."""

from __future__ import annotations

from pathlib import Path

from vitheory.core import history
from vitheory.core.artifacts import read_json, read_rows, read_table
from vitheory.core.paths import artifact
from vitheory.core.rederive import agrees
from vitheory.li23 import sparsify, token_keeping
from vitheory.li23.attention import mean_over_seeds
from vitheory.li23.phase import fit_all
from vitheory.params import load_params


def li_vit(root: Path) -> list[str]:
    """Each seed's initial and final metrics from the logged series, and their means."""
    path = artifact("li_vit_metrics")
    stored = read_json(root / path)
    logged: dict[int, dict[int, dict[str, dict[str, float]]]] = {}
    for row in read_table(root / artifact("li_vit_history"), history.COLUMNS):
        logged.setdefault(row["seed"], {}).setdefault(row["step"], {}).setdefault(row["split"], {})[row["metric"]] = \
            row["value"]
    runs = [{"seed": seed, "initial": steps.get(0), "final": steps.get(stored["steps"])}
            for seed, steps in sorted(logged.items())]
    derived = {"runs": runs, "initial": mean_over_seeds([run["initial"] for run in runs]),
               "final": mean_over_seeds([run["final"] for run in runs])}
    return agrees(derived, stored, path, f"initial/final values differ from {artifact('li_vit_history')}")


def phase(root: Path) -> list[str]:
    path = artifact("phase_metrics")
    derived = fit_all(load_params(root / "params.yaml").phase.fit, root)
    return agrees(derived, read_json(root / path), path, "differs from a refit of the phase_diagram runs")


def sparsify_summary(root: Path) -> list[str]:
    path = artifact("sparsify_metrics")
    derived = sparsify.summarize(read_table(root / artifact("sparsify_runs"), sparsify.COLUMNS))
    return agrees(derived, read_json(root / path), path, f"means differ from {artifact('sparsify_runs')}")


def sparsify_real(root: Path) -> list[str]:
    path = artifact("sparsify_real_metrics")
    stored = read_json(root / path)
    runs = read_rows(root / artifact("sparsify_real_runs"), token_keeping.COLUMNS)
    return agrees(token_keeping.summarize(runs, stored["patches"], stored["half"]), stored, path,
                  f"differs from {artifact('sparsify_real_runs')}")


CHECKS = (li_vit, phase, sparsify_summary, sparsify_real)
