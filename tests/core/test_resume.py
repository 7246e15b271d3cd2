"""Resumable training: a run killed after an epoch and resumed ends with the same bytes."""

import json

import pytest
import torch
from conftest import ROOT

from vitheory.core.device import seeded
from vitheory.core.resume import Resume, fingerprint
from vitheory.images.models import SmallViT
from vitheory.images.training import fit
from vitheory.params import load_params

CFG = load_params(ROOT / "params.yaml").real
X = torch.randn(40, 1, 8, 8, generator=torch.Generator().manual_seed(0))
Y = torch.arange(40) % 4


class Killed(Exception):
    pass


def _model():
    return seeded(0, lambda: SmallViT(image_size=8, channels=1, n_classes=4, patch=2, depth=1, heads=2, width=16,
                                      mlp_ratio=2, attention="vanilla", pool="cls"))


def _train(state=None, kill_at=None, epochs=4):
    model = _model()

    def on_epoch(epoch):
        if epoch == kill_at:
            raise Killed  # before this epoch's state is saved, as a kill would be
        with torch.no_grad():
            return {"weight_norm": float(sum(p.norm() for p in model.parameters()))}

    fit(model, X, Y, CFG, epochs=epochs, seed=3, on_epoch=on_epoch, state=state, progress=False)
    return model


def test_a_resumed_run_ends_with_the_same_weights_and_log(tmp_path):
    reference = _train()
    resume = Resume(tmp_path / "resume", "fp")
    with pytest.raises(Killed):
        _train(resume.run("run"), kill_at=3)
    state = Resume(tmp_path / "resume", "fp").run("run")
    assert state.epoch == 2 and len(state.log) == 2
    resumed = _train(state)
    for (name, a), b in zip(reference.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name
    uninterrupted = Resume(tmp_path / "other", "fp").run("run")
    _train(uninterrupted)
    assert state.log == uninterrupted.log


def test_a_resumed_run_really_skips_the_saved_epochs(tmp_path):
    state = Resume(tmp_path, "fp").run("run")
    _train(state, epochs=2)
    calls = []
    fit(_model(), X, Y, CFG, epochs=3, seed=3, on_epoch=lambda epoch: calls.append(epoch) or {}, state=state,
        progress=False)
    assert calls == [3]


def test_another_fingerprint_starts_afresh_and_finish_keeps_only_the_marker(tmp_path):
    resume = Resume(tmp_path, "fp")
    _train(resume.run("run"), epochs=1)
    assert Resume(tmp_path, "fp").run("run").epoch == 1
    assert Resume(tmp_path, "changed").run("run").epoch == 0
    finished = Resume(tmp_path, "fp")
    finished.finish()
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]
    assert json.loads((tmp_path / "state.json").read_text()) == {"complete": True}
    assert Resume(tmp_path, "fp").run("run").epoch == 0  # a finished stage is not resumed


def test_the_fingerprint_covers_config_and_input_bytes(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "x.bin").write_bytes(b"1")
    first = fingerprint({"lr": 1}, [data])
    assert fingerprint({"lr": 1}, [data]) == first
    assert fingerprint({"lr": 2}, [data]) != first
    (data / "x.bin").write_bytes(b"2")
    assert fingerprint({"lr": 1}, [data]) != first


def _assert_same_weights(a, b):
    for (name, x), y in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(x, y), name


@pytest.mark.parametrize("damage", ["truncated", "torn"])
def test_an_unusable_state_is_discarded_with_a_warning_and_the_run_trains_afresh(tmp_path, capsys, damage):
    """Resume state is a cache: a file cut in half after a kill, or tensors and sidecar of different
    epochs (a kill between the two writes), restart that run from scratch with one warning."""
    reference = _train()
    resume = Resume(tmp_path, "fp")
    with pytest.raises(Killed):
        _train(resume.run("run"), kill_at=3)
    tensors, sidecar = tmp_path / "run.safetensors", tmp_path / "run.json"
    if damage == "truncated":
        tensors.write_bytes(tensors.read_bytes()[:tensors.stat().st_size // 2])
    else:
        meta = json.loads(sidecar.read_text())
        sidecar.write_text(json.dumps(meta | {"epoch": 1, "log": meta["log"][:1]}))
    capsys.readouterr()
    state = Resume(tmp_path, "fp").run("run")
    warning = capsys.readouterr().err
    assert warning.count("\n") == 1 and warning.startswith("warning: ") and "trains afresh" in warning
    assert ("unreadable" if damage == "truncated" else "inconsistent") in warning
    assert state.epoch == 0 and not tensors.exists()
    _assert_same_weights(reference, _train(state))
    assert state.epoch == 4 and len(state.log) == 4
