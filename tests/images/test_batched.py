"""The seeds of one image training as one batched model (vitheory.images.batched): each seed ends where
run_task takes it alone, to float tolerance, and resumes from the state either path saves."""

import shutil
from dataclasses import replace
from functools import partial

import pytest
import torch
from conftest import ROOT

from vitheory.images import datasets as images
from vitheory.images import training
from vitheory.images.batched import BatchedFit, batches, train_batched
from vitheory.images.params import CompileParams, ResNetPreset, ViTPreset
from vitheory.images.recipe import FitTask
from vitheory.images.training import Normalizer, build_model, pixel_permutation, run_task
from vitheory.params import load_params
from vitheory.pk22.params import AlterNetPreset
from vitheory.pk22.trainings import build_alternet

PARAMS = load_params(ROOT / "params.yaml")
# a smaller last batch, shifts, flips, warmup then cosine, an evaluation every epoch
CFG = replace(PARAMS.real, batch_size=32, shift=1, hflip=True, warmup_epochs=1, eval_every=1)
BUILDS = {"vit": partial(build_model, ViTPreset(patch=2, depth=1, heads=2, width=16, mlp_ratio=2, attention="vanilla",
                                                pool="cls"), 8, 1, 10),
          "cnn": partial(build_model, ResNetPreset(widths=(8, 16), blocks=(1, 1)), 8, 1, 10),
          "alternet": partial(build_alternet, AlterNetPreset(widths=(8, 16), blocks=(1, 2), attention=(0, 1), heads=2),
                              8, 1, 10)}
SEEDS = (0, 1, 2)


class Killed(Exception):
    pass


def _digits():
    data = images.split(images.load_dataset("digits", "unused"), val_fraction=0.1, test_fraction=0.1,
                        train_fraction=0.1, seed=0)
    normalize = Normalizer.fit(data["train"])
    return normalize(data["train"]), data["train"].y, {name: (normalize(data[name]), data[name].y)
                                                      for name in ("val", "test")}


X, Y, HELD_OUT = _digits()


def _tasks(model: str, epochs: int = 2, state_folder=None, **changes) -> list[FitTask]:
    permutation = pixel_permutation(8, 8, 2, 0)
    return [FitTask(BUILDS[model], replace(CFG, **changes), X, Y, epochs, seed, HELD_OUT, permutation,
                    (state_folder, f"seed_{seed}") if state_folder else None, f"seed_{seed}/")
            for seed in SEEDS]


def _determined(name: str, weight: torch.Tensor) -> torch.Tensor:
    """The part of a weight its loss determines. The keys' bias (the second half of an attention's qk
    bias) adds the same to every score of a query, which softmax ignores: its gradient is zero but for
    rounding, which AdamW's normalised step turns into steps of about lr, in any direction."""
    return weight[:len(weight) // 2] if name.endswith("attn.qk.bias") else weight


def _assert_close(batched, alone):
    assert batched.weights.keys() == alone.weights.keys()
    for name, weight in alone.weights.items():
        torch.testing.assert_close(_determined(name, batched.weights[name]), _determined(name, weight), rtol=1e-4,
                                   atol=1e-5, msg=name)
    assert [epoch.keys() for epoch in batched.log] == [epoch.keys() for epoch in alone.log]
    for epoch, reference in zip(batched.log, alone.log):
        assert epoch == pytest.approx(reference, rel=1e-4, abs=1e-5)
    assert batched.final.keys() == alone.final.keys()
    for name, metrics in alone.final.items():
        assert batched.final[name] == pytest.approx(metrics, rel=1e-4, abs=1e-5)


@pytest.mark.parametrize("model", BUILDS)
def test_each_batched_seed_ends_where_it_would_alone(model):
    tasks = _tasks(model)
    together = train_batched(tasks, torch.device("cpu"), progress=False)
    assert len(together) == len(SEEDS) and len(together[0].log) == 2
    for task, batched in zip(tasks, together):
        _assert_close(batched, run_task(task, "cpu", progress=False))
    assert not torch.equal(together[0].weights["head.weight"], together[1].weights["head.weight"])


def test_only_tasks_that_differ_in_seed_and_log_train_as_one_batch():
    vit, cnn = _tasks("vit"), _tasks("cnn")
    longer, other_lr = _tasks("vit", epochs=3)[0], _tasks("vit", lr=CFG.lr / 2)[0]
    copied_images = replace(vit[1], x=X.clone(), desc="a copy of the same images")
    other_images = replace(vit[2], x=X.flip(0))
    assert batches([vit[0], cnn[0], copied_images, longer, other_lr, cnn[1], other_images]) == [
        [0, 2], [1, 5], [3], [4], [6]]


def test_a_killed_batched_run_resumes_batched_or_alone(tmp_path, monkeypatch):
    """Killed before its second epoch's save: resumed batched, it ends with the bytes of an uninterrupted
    batched run; a seed whose state is gone trains afresh in a batch of its own; and the state the
    batched run saved resumes per seed in run_task, to float tolerance."""
    for folder in ("whole", "killed"):
        (tmp_path / folder).mkdir()
    uninterrupted = train_batched(_tasks("cnn", state_folder=tmp_path / "whole"), torch.device("cpu"), progress=False)
    evaluate = BatchedFit.evaluate

    def killed_in_epoch_two(fitting, *args):
        if fitting.logs[0]:
            raise Killed
        return evaluate(fitting, *args)

    with monkeypatch.context() as patched:
        patched.setattr(BatchedFit, "evaluate", killed_in_epoch_two)
        with pytest.raises(Killed):
            train_batched(_tasks("cnn", state_folder=tmp_path / "killed"), torch.device("cpu"), progress=False)
    for suffix in ("json", "safetensors"):
        (tmp_path / "killed" / f"seed_{SEEDS[-1]}.{suffix}").unlink()  # the last seed starts afresh
    shutil.copytree(tmp_path / "killed", tmp_path / "alone")
    alone_from_batched_state = run_task(_tasks("cnn", state_folder=tmp_path / "alone")[0], "cpu", progress=False)
    resumed = train_batched(_tasks("cnn", state_folder=tmp_path / "killed"), torch.device("cpu"), progress=False)
    for whole, again in zip(uninterrupted[:-1], resumed[:-1]):
        assert all(torch.equal(whole.weights[name], weight) for name, weight in again.weights.items())
        assert whole.log == again.log and whole.final == again.final
    _assert_close(resumed[-1], uninterrupted[-1])
    _assert_close(alone_from_batched_state, uninterrupted[0])


def test_the_batched_evaluation_counts_a_seed_with_nan_outputs_wrong():
    """A diverged seed's NaN logits are no prediction (issue 53), here as in the per-seed evaluate."""
    tasks = _tasks("vit", epochs=1)[:2]
    fit = BatchedFit(tasks, [None, None], torch.device("cpu"))
    with torch.no_grad():
        next(iter(fit.ensemble.params.values()))[1].fill_(float("nan"))  # the second seed's weights only
    metrics = fit.evaluate()
    assert all(split["accuracy"] == 0.0 for split in metrics[1].values())
    assert all(split["accuracy"] > 0.0 for split in metrics[0].values())


def _dispatched(monkeypatch, tasks: list[FitTask]) -> dict[str, list[int]]:
    """Which trainer `run_tasks` hands each task to on a GPU (CUDA stood in for: both trainers recorded,
    nothing trained), by the tasks' seeds."""
    chosen: dict[str, list[int]] = {"batched": [], "one at a time": []}

    def batched(family, device, progress):
        chosen["batched"] += [task.seed for task in family]
        return [f"batched {task.seed}" for task in family]

    def alone(task, device, progress):
        chosen["one at a time"].append(task.seed)
        return f"alone {task.seed}"

    monkeypatch.setattr(training, "train_batched", batched)
    monkeypatch.setattr(training, "run_task", alone)
    results = training.run_tasks(tasks, torch.device("cuda"), progress=False)
    assert results == [next(f"{how} {task.seed}" for how in ("batched", "alone")
                            if task.seed in chosen["batched" if how == "batched" else "one at a time"])
                       for task in tasks]
    return chosen


@pytest.mark.parametrize("model", BUILDS)
def test_on_a_gpu_a_family_of_seeds_trains_batched_unless_its_kind_compiles(monkeypatch, model):
    """Every compile switch off: the batched trainer. The switch of the family's kind on: one seed after the
    other, as the per-seed trainer compiles it; another kind's switch on changes nothing."""
    off = CompileParams.every_kind(False)
    assert _dispatched(monkeypatch, _tasks(model, compile_by_kind=off)) == {"batched": [*SEEDS], "one at a time": []}
    own = replace(off, **{model: True})
    assert _dispatched(monkeypatch, _tasks(model, compile_by_kind=own)) == {"batched": [], "one at a time": [*SEEDS]}
    other = replace(off, **{next(kind for kind in BUILDS if kind != model): True})
    assert _dispatched(monkeypatch, _tasks(model, compile_by_kind=other)) == {"batched": [*SEEDS], "one at a time": []}


def test_on_a_gpu_compiled_and_eager_families_keep_the_tasks_order(monkeypatch):
    """A stage's tasks of two kinds, one compiled: each to its trainer, the results in the tasks' order."""
    cfg = replace(CompileParams.every_kind(False), cnn=True)
    vit, cnn = _tasks("vit", compile_by_kind=cfg), _tasks("cnn", compile_by_kind=cfg)
    mixed = [replace(task, seed=10 + task.seed) for task in cnn[:1]] + vit + [replace(cnn[1], seed=11)]
    assert _dispatched(monkeypatch, mixed) == {"batched": [*SEEDS], "one at a time": [10, 11]}
