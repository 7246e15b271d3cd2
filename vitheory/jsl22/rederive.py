"""[JSL22] summaries re-derived from raw artifacts, for `python -m vitheory.verify`: JSL-1/2's medians
from the logged series (the variant partition's from its runs) and the association again from the checkpoints, and transfer's samples needed
from its runs. (JSL-3's control stage keeps no per-run table or checkpoint: its claim rests on its
metrics file.)"""

from __future__ import annotations

import statistics
from pathlib import Path

from vitheory.core import history
from vitheory.core.artifacts import read_json, read_rows, read_split, read_table
from vitheory.core.checkpoint import load_checkpoint
from vitheory.core.paths import artifact
from vitheory.core.rederive import agrees, differs, same
from vitheory.jsl22.data import association
from vitheory.jsl22.training import TRANSFER_COLUMNS, VARIANT_FOLDER, member_folder, samples_needed, summarize


def spatial(root: Path) -> list[str]:
    """JSL-1, JSL-2: the ViT's medians from its logged series, and the association once more from the
    positional encodings in its checkpoints."""
    path = artifact("spatial_metrics")
    stored = read_json(root / path)
    series: dict[int, dict[int, dict[str, float]]] = {}
    for row in read_table(root / artifact("spatial_history"), history.COLUMNS):
        if row["model"] == stored["score_form"]:
            series.setdefault(row["step"], {}).setdefault(row["seed"], {})[row["metric"]] = row["value"]
    last = max(series)
    derived = {moment: summarize([series[step][seed] for seed in sorted(series[step])])
               for moment, step in (("initial", 0), ("final", last))}
    problems = [] if same(derived, stored["vit"]) else differs(
        path, f"the ViT's medians differ from {artifact('spatial_history')}")
    sets = read_split(root / artifact("spatial_data"), "structure", ("sets",))["sets"]
    exact = []
    for seed in range(stored["seeds"]):
        P = load_checkpoint(root / artifact("spatial_models") / member_folder("vit", seed)).P.detach()
        exact.append(association(P @ P.T, sets)["exact"])
    if not same(statistics.median(exact), stored["vit"]["final"]["pos_exact_median"]):
        problems += differs(path, f"the association differs from that of the checkpoints in "
                                  f"{artifact('spatial_models') / 'vit'}")
    return problems + _variant(root, stored)


def _variant(root: Path, stored: dict) -> list[str]:
    """The variant partition's summaries from its runs, and each seed's association from its checkpoint."""
    path, variant = artifact("spatial_metrics"), stored["variant"]
    runs = variant["runs"]["vit"]
    problems = [] if same({moment: summarize(runs[moment]) for moment in ("initial", "final")}, variant["vit"]) \
        else differs(path, "the variant partition's medians differ from its runs")
    sets = read_split(root / artifact("spatial_variant_data"), "structure", ("sets",))["sets"]
    folder = root / artifact("spatial_models") / VARIANT_FOLDER
    for seed, run in enumerate(runs["final"]):
        P = load_checkpoint(folder / member_folder("vit", seed)).P.detach()
        if not same(association(P @ P.T, sets)["exact"], run["pos_exact"]):
            problems += differs(path, f"the variant partition's association of seed {seed} differs from its "
                                      f"checkpoint's in {folder}")
    return problems


def transfer(root: Path) -> list[str]:
    path = artifact("transfer_metrics")
    stored = read_json(root / path)
    runs = read_rows(root / artifact("transfer_runs"), TRANSFER_COLUMNS)
    derived = {f"{method}_n_needed": samples_needed(runs, method, stored["target_error"])
               for method in ("finetune", "scratch")} | {"diverged_runs": sum(run[-1] for run in runs)}
    return agrees(derived, stored, path, f"samples needed differ from {artifact('transfer_runs')}")


CHECKS = (spatial, transfer)
