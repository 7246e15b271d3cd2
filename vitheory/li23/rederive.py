"""[LI23] stored values re-derived from other raw artifacts, for `python -m vitheory.verify`: LI-3's
per-seed runs from the logged series, the phase fits from the phase_diagram runs, and LI-7's per-seed N_min
from the init_error runs. The sparsification stages store only their runs and settings: nothing there to
re-derive."""

from __future__ import annotations

from pathlib import Path

from vitheory.core import history
from vitheory.core.artifacts import read_json, read_table
from vitheory.core.config import read_params_file, view
from vitheory.core.paths import artifact
from vitheory.core.rederive import Problem, agrees
from vitheory.li23 import initial_error
from vitheory.li23.params import PhaseParams
from vitheory.li23.phase import PHASE_FIT_KEYS, fit_all


def li_vit(root: Path) -> list[Problem]:
    """Each seed's initial and final metrics from the logged series."""
    path = artifact("li_vit_metrics")
    stored = read_json(root / path)
    logged: dict[int, dict[int, dict[str, dict[str, float]]]] = {}
    for row in read_table(root / artifact("li_vit_history"), history.COLUMNS):
        logged.setdefault(row["seed"], {}).setdefault(row["step"], {}).setdefault(row["split"], {})[row["metric"]] = \
            row["value"]
    runs = [{"seed": seed, "initial": steps.get(0), "final": steps.get(stored["steps"])}
            for seed, steps in sorted(logged.items())]
    return agrees({"runs": runs}, stored, path, f"initial/final values differ from {artifact('li_vit_history')}")


def phase(root: Path) -> list[Problem]:
    path = artifact("phase_metrics")
    phase_params = view(read_params_file(root / "params.yaml"), {"phase": PhaseParams}, PHASE_FIT_KEYS,
                        "verify").phase
    derived = fit_all(phase_params, root)
    return agrees(derived, read_json(root / path), path, "differs from a refit of the phase_diagram runs")


def init_error(root: Path) -> list[Problem]:
    """Each seed's N_min per rule and level, from the init_error runs at the threshold the record names."""
    path = artifact("init_error_metrics")
    stored = read_json(root / path)
    rows = read_table(root / artifact("init_error_runs"), initial_error.COLUMNS)
    derived = {"n_min": initial_error.summarize(rows, stored["success_rate_threshold"])}
    return agrees(derived, stored, path, f"per-seed N_min differ from {artifact('init_error_runs')}")


CHECKS = (li_vit, phase, init_error)
