"""train_real's re-derivation: each stored per-seed run is checked against its checkpoint; the file holds
no summary over seeds to check."""

import torch
from conftest import ROOT

from vitheory.core.artifacts import write_json
from vitheory.core.checkpoint import save_checkpoint, seed_folder
from vitheory.core.device import seeded
from vitheory.core.paths import artifact, run_name
from vitheory.images import rederive
from vitheory.images.prepare import prepare
from vitheory.images.structure import structure_scores
from vitheory.images.training import build_model, evaluate, load_images
from vitheory.params import load_params

PARAMS = load_params(ROOT / "params.yaml")


def test_each_stored_run_is_checked_against_its_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setattr(rederive, "runs", {"real_models": ["vit"], "real_pixels": ["natural"]}.get)
    prepare(PARAMS.images, tmp_path / artifact("images"))
    images = load_images(tmp_path / artifact("images"), ("train", "test"), torch.device("cpu"))
    model = seeded(0, lambda: build_model(PARAMS.real.models.vit, images.image_size, images.channels,
                                          images.n_classes)).eval()
    run = run_name("vit", "natural")
    save_checkpoint(tmp_path / artifact("real_models") / run / seed_folder(0), model, {"permutation": None})
    record = {"seed": 0, "test_accuracy": evaluate(model, images.x["test"], images.y["test"])["accuracy"],
              **structure_scores(model, 0, images.x["train"], None)}
    path = tmp_path / artifact("real_metrics") / f"{run}.json"
    write_json(path, {"runs": {seed_folder(0): record}})
    assert rederive.train_real(tmp_path) == []
    record["test_accuracy"] -= 0.01
    write_json(path, {"runs": {seed_folder(0): record}})
    [problem] = rederive.train_real(tmp_path)
    assert problem.path == artifact("real_metrics") / f"{run}.json"
    assert "seed_0's test accuracy" in problem.text and "dvc repro -f train_real" in problem.text
