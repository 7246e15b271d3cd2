"""[JSL22] verify's check: train_spatial's per-seed runs against its logged series and the positional
encodings in its checkpoints."""

import math
from pathlib import Path

import pytest
import torch

from vitheory.core.artifacts import read_json, write_json, write_splits
from vitheory.core.checkpoint import save_checkpoint
from vitheory.core.history import History, write_histories
from vitheory.core.paths import artifact
from vitheory.jsl22 import rederive
from vitheory.jsl22.data import association
from vitheory.jsl22.models import PositionalViT
from vitheory.jsl22.training import VARIANT_FOLDER, member_folder

SETS = torch.tensor([[0, 1], [2, 3]])
HISTORY = str(artifact("spatial_history"))


def _runs(root: Path, folder: Path) -> dict[str, list[dict[str, float]]]:
    """Two seeds' checkpoints in `folder` of the models, and their runs as train_spatial stores them."""
    runs = {"initial": [], "final": [], "unstable": [], "halvings": []}
    for seed in range(2):
        torch.manual_seed(seed)
        model = PositionalViT(n_patches=4, dim=3, pos_dim=2, score_form="ppt", pos_init_std=1.0, readout_init_std=0.1)
        save_checkpoint(root / artifact("spatial_models") / folder / member_folder("vit", seed), model, {})
        P = model.P.detach()
        runs["initial"].append({"error_rate": 0.5, "pos_exact": 0.0})
        # seed 1 diverged and stayed unstable, no halving allowed: its loss, NaN in the series and in the metrics
        # alike, is reproduced
        runs["final"].append({"error_rate": 0.1 * (seed + 1), "loss": [0.2, math.nan][seed],
                              "pos_exact": association(P @ P.T, SETS)["exact"]})
        runs["unstable"].append(seed == 1)
        runs["halvings"].append(0)
    return runs


def _plant(root: Path) -> None:
    for data in ("spatial_data", "spatial_variant_data"):
        write_splits(root / artifact(data), {"structure": {"sets": SETS}}, {})
    vit, variant = _runs(root, Path()), _runs(root, VARIANT_FOLDER)
    histories = [History(model="ppt", seed=seed) for seed in range(2)]
    for history, initial, final in zip(histories, vit["initial"], vit["final"]):
        history.add(0, {"test": initial})
        history.add(10, {"test": final})
    write_histories(root / artifact("spatial_history"), histories)
    write_json(root / artifact("spatial_metrics"), {"score_form": "ppt", "runs": {"vit": vit},
                                                    "variant": {"runs": {"vit": variant}}})


def _tamper(root: Path, change) -> None:
    path = root / artifact("spatial_metrics")
    stored = read_json(path)
    change(stored)
    write_json(path, stored)


def test_consistent_runs_pass(tmp_path):
    _plant(tmp_path)
    assert rederive.spatial(tmp_path) == []


@pytest.mark.parametrize("change,names", [
    (lambda s: s["runs"]["vit"]["initial"][1].update(error_rate=0.4), [HISTORY]),
    (lambda s: s["runs"]["vit"]["final"][0].update(pos_exact=-1.0), [HISTORY, "association of seed 0"]),
    (lambda s: s["runs"]["vit"]["final"][1].update(loss=0.5), [HISTORY]),  # a number where the series has NaN
    (lambda s: s["variant"]["runs"]["vit"]["final"][1].update(pos_exact=-1.0),
     ["the variant partition's association of seed 1"]),
])
def test_a_run_its_raw_artifacts_do_not_reproduce_is_named(tmp_path, change, names):
    _plant(tmp_path)
    _tamper(tmp_path, change)
    problems = rederive.spatial(tmp_path)
    assert len(problems) == len(names)
    for problem, name in zip(problems, names):
        assert name in problem.text and problem.path == artifact("spatial_metrics")


def test_a_seed_retrained_at_halved_rates_is_checked_at_initialisation_only(tmp_path):
    """The series log the recipe's training; seed 0, retrained once by the stability rule, ends elsewhere: its final
    metrics are not compared with the series, its initial ones still are."""
    _plant(tmp_path)
    _tamper(tmp_path, lambda s: (s["runs"]["vit"]["halvings"].__setitem__(0, 1),
                                 s["runs"]["vit"]["final"][0].update(error_rate=0.01)))
    assert rederive.spatial(tmp_path) == []
    _tamper(tmp_path, lambda s: s["runs"]["vit"]["initial"][0].update(error_rate=0.4))
    assert [HISTORY in problem.text for problem in rederive.spatial(tmp_path)] == [True]
