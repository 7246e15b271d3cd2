"""[JSL22] raw artifacts checked against each other, for `python -m vitheory.verify`: train_spatial's
per-seed ViT metrics against its logged series, and their association against the positional
encodings in the checkpoints (the variant partition's too). Every summary is the claims' own
(vitheory.jsl22.claims), so none is stored to re-derive; control and transfer keep their runs once,
with no second record to check them against."""

from __future__ import annotations

from pathlib import Path

from vitheory.core import history
from vitheory.core.artifacts import read_json, read_split, read_table
from vitheory.core.checkpoint import load_checkpoint
from vitheory.core.paths import artifact
from vitheory.core.rederive import Problem, differs, same
from vitheory.jsl22.data import association
from vitheory.jsl22.training import VARIANT_FOLDER, member_folder


def spatial(root: Path) -> list[Problem]:
    """JSL-1, JSL-2: each ViT seed's initial and final metrics against its logged series (step 0 and the
    last step; the final ones only for a seed the stability rule did not retrain), and its association against
    its checkpoint's positional encodings."""
    path = artifact("spatial_metrics")
    stored = read_json(root / path)
    series: dict[int, dict[int, dict[str, float]]] = {}
    for row in read_table(root / artifact("spatial_history"), history.COLUMNS):
        if row["model"] == stored["score_form"]:
            series.setdefault(row["step"], {}).setdefault(row["seed"], {})[row["metric"]] = row["value"]
    runs = stored["runs"]["vit"]
    # the series log the recipe's training: a seed retrained at halved rates (the stability rule) ends elsewhere
    kept = [seed for seed, halvings in enumerate(runs["halvings"]) if not halvings]
    logged = {moment: [series[step][seed] for seed in sorted(series[step]) if moment == "initial" or seed in kept]
              for moment, step in (("initial", 0), ("final", max(series)))}
    recorded = {"initial": runs["initial"], "final": [runs["final"][seed] for seed in kept]}
    problems = [] if same(logged, recorded) else differs(
        path, f"the ViT's per-seed metrics differ from {artifact('spatial_history')}")
    problems += _association(root, artifact("spatial_data"), artifact("spatial_models"), runs["final"], "")
    return problems + _association(root, artifact("spatial_variant_data"), artifact("spatial_models") / VARIANT_FOLDER,
                                   stored["variant"]["runs"]["vit"]["final"], "the variant partition's ")


def _association(root: Path, data: Path, models: Path, final: list[dict[str, float]], label: str) -> list[Problem]:
    """Each seed's exact association of P P^T in `final` against the positional encodings in its checkpoint."""
    sets = read_split(root / data, "structure", ("sets",))["sets"]
    problems = []
    for seed, run in enumerate(final):
        folder = root / models / member_folder("vit", seed)
        P = load_checkpoint(folder).P.detach()
        if not same(association(P @ P.T, sets)["exact"], run["pos_exact"]):
            problems += differs(artifact("spatial_metrics"), f"{label}association of seed {seed} differs from its "
                                                             f"checkpoint's in {folder}")
    return problems


CHECKS = (spatial,)
