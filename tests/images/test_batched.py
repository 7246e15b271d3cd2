"""The one image trainer (vitheory.images.batched): a batch of one runs the recipe as a model's own plain
loop does, to the bit; each seed of a stacked batch ends where a batch of one takes it, to float tolerance,
and resumes from the state either saves."""

import math
import shutil
from dataclasses import replace
from functools import partial

import pytest
import torch
import torch.nn.functional as F
from conftest import ROOT

from vitheory.core.device import seeded
from vitheory.core.errors import TrainingDiverged
from vitheory.images import batched, training
from vitheory.images import datasets as images
from vitheory.images.batched import StackedModels, batches, evaluate_batch, fit_batch, train_batched
from vitheory.images.params import CompileParams, ResNetPreset, ViTPreset
from vitheory.images.recipe import FitTask, apply_augmentation, permute_pixels, warmup_cosine
from vitheory.images.training import Normalizer, build_model, fit, pixel_permutation, run_task
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


def _assert_close(stacked, alone):
    assert stacked.weights.keys() == alone.weights.keys()
    for name, weight in alone.weights.items():
        torch.testing.assert_close(_determined(name, stacked.weights[name]), _determined(name, weight), rtol=1e-4,
                                   atol=1e-5, msg=name)
    assert [epoch.keys() for epoch in stacked.log] == [epoch.keys() for epoch in alone.log]
    for epoch, reference in zip(stacked.log, alone.log):
        assert epoch == pytest.approx(reference, rel=1e-4, abs=1e-5)
    assert stacked.final.keys() == alone.final.keys()
    for name, metrics in alone.final.items():
        assert stacked.final[name] == pytest.approx(metrics, rel=1e-4, abs=1e-5)


def _plain_loop(model: torch.nn.Module, cfg, epochs: int, seed: int, permutation: torch.Tensor | None) -> None:
    """The recipe as one model's own loop, written out: each epoch the data order, then per batch its
    shifts (dy for every image, then dx) and its flips, from one generator; cross-entropy; AdamW under a
    warmup then a cosine schedule."""
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    steps = math.ceil(len(Y) / cfg.batch_size)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, warmup_cosine(min(cfg.warmup_epochs * steps, epochs * steps - 1), epochs * steps))
    for _ in range(epochs):
        model.train()
        order = torch.randperm(len(Y), generator=generator)
        for start in range(0, len(Y), cfg.batch_size):
            index = order[start:start + cfg.batch_size]
            shifts = torch.stack([torch.randint(0, 2 * cfg.shift + 1, (len(index),), generator=generator)
                                  for _ in range(2)], 1)
            flips = torch.rand(len(index), generator=generator) < 0.5
            images = permute_pixels(apply_augmentation(X[index], cfg.shift, shifts, flips), permutation)
            loss = F.cross_entropy(model(images), Y[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()


@pytest.mark.parametrize("permuted", [False, True])
@pytest.mark.parametrize("model", BUILDS)
def test_a_batch_of_one_trains_to_the_bits_of_the_plain_loop(model, permuted):
    """`fit`, the trainer's batch of one (every seed on a CPU), against the plain loop: the same bytes, weights
    and BatchNorm statistics, after two epochs (a smaller last batch, warmup then cosine, shifts and flips).
    It fails if the trainer draws a seed's data order or augmentation in another order, or feeds the model
    a batch laid out otherwise (one channel: the strides a convolution reads)."""
    permutation = pixel_permutation(8, 8, 1, 0) if permuted else None
    trained, plain = seeded(7, BUILDS[model]), seeded(7, BUILDS[model])
    fit(trained, X, Y, CFG, epochs=2, seed=7, permutation=permutation, progress=False)
    _plain_loop(plain, CFG, 2, 7, permutation)
    assert trained.state_dict().keys() == plain.state_dict().keys()
    ours = trained.state_dict()
    unequal = [name for name, weight in plain.state_dict().items() if not torch.equal(ours[name], weight)]
    assert not unequal, unequal
    assert not torch.equal(trained.state_dict()["head.weight"], seeded(7, BUILDS[model]).state_dict()["head.weight"])


@pytest.mark.parametrize("model", BUILDS)
def test_each_stacked_seed_ends_where_a_batch_of_one_takes_it(model):
    tasks = _tasks(model)
    together = train_batched(tasks, torch.device("cpu"), progress=False)
    assert len(together) == len(SEEDS) and len(together[0].log) == 2
    for task, stacked in zip(tasks, together):
        _assert_close(stacked, run_task(task, "cpu", progress=False))
    assert not torch.equal(together[0].weights["head.weight"], together[1].weights["head.weight"])


def test_only_tasks_that_differ_in_seed_and_log_train_as_one_batch():
    vit, cnn = _tasks("vit"), _tasks("cnn")
    longer, other_lr = _tasks("vit", epochs=3)[0], _tasks("vit", lr=CFG.lr / 2)[0]
    copied_images = replace(vit[1], x=X.clone(), desc="a copy of the same images")
    other_images = replace(vit[2], x=X.flip(0))
    assert batches([vit[0], cnn[0], copied_images, longer, other_lr, cnn[1], other_images]) == [
        [0, 2], [1, 5], [3], [4], [6]]


@pytest.mark.parametrize("model", BUILDS)
def test_a_family_of_seeds_is_one_batch_unless_its_kind_compiles(model):
    """Every compile switch off: one batch. The switch of the family's kind on: a batch of one per seed (what
    is compiled is a model's forward); another kind's switch on changes nothing."""
    off = CompileParams.every_kind(False)
    assert batches(_tasks(model, compile_by_kind=off)) == [[0, 1, 2]]
    assert batches(_tasks(model, compile_by_kind=replace(off, **{model: True}))) == [[0], [1], [2]]
    other = replace(off, **{next(kind for kind in BUILDS if kind != model): True})
    assert batches(_tasks(model, compile_by_kind=other)) == [[0, 1, 2]]


def test_on_a_gpu_every_batch_trains_and_the_results_keep_the_tasks_order(monkeypatch):
    """A stage's tasks of two kinds, one compiled, on CUDA (stood in for: the batches recorded, nothing
    trained): the eager family as one batch, each compiled task alone, the results in the tasks' order."""
    cfg = replace(CompileParams.every_kind(False), cnn=True)
    vit, cnn = _tasks("vit", compile_by_kind=cfg), _tasks("cnn", compile_by_kind=cfg)
    mixed = [replace(cnn[0], seed=10), *vit, replace(cnn[1], seed=11)]
    trained = []

    def recorded(tasks, states, device, progress):
        trained.append([task.seed for task in tasks])
        return [f"seed {task.seed}" for task in tasks]

    monkeypatch.setattr(batched, "fit_tasks", recorded)
    assert training.run_tasks(mixed, torch.device("cuda"), progress=False) == [f"seed {t.seed}" for t in mixed]
    assert trained == [[10], [*SEEDS], [11]]


def test_a_killed_batched_run_resumes_batched_or_alone(tmp_path, monkeypatch):
    """Killed before its second epoch's save: resumed batched, it ends with the bytes of an uninterrupted
    batched run; a seed whose state is gone trains afresh in a batch of its own; and the state the
    batched run saved resumes per seed in run_task, to float tolerance."""
    for folder in ("whole", "killed"):
        (tmp_path / folder).mkdir()
    uninterrupted = train_batched(_tasks("cnn", state_folder=tmp_path / "whole"), torch.device("cpu"), progress=False)
    calls = []

    def killed_in_epoch_two(*args):
        calls.append(args)
        if len(calls) > len(HELD_OUT):  # epoch 1 evaluated every split; epoch 2 is killed at its first
            raise Killed
        return evaluate_batch(*args)

    with monkeypatch.context() as patched:
        patched.setattr(batched, "evaluate_batch", killed_in_epoch_two)
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


def test_the_evaluation_counts_a_seed_with_nan_outputs_wrong():
    """A diverged seed's NaN logits are no prediction (issue 53), in a stacked batch as in a batch of one."""
    stacked = StackedModels([seeded(seed, BUILDS["vit"]) for seed in SEEDS[:2]])
    with torch.no_grad():
        next(iter(stacked.ensemble.params.values()))[1].fill_(float("nan"))  # the second seed's weights only
    metrics = evaluate_batch(stacked, *HELD_OUT["val"])
    assert metrics[1]["accuracy"] == 0.0 and metrics[0]["accuracy"] > 0.0


@pytest.mark.parametrize("seeds", [1, len(SEEDS)])
def test_a_diverging_seed_stops_its_batch_naming_it_and_its_epoch_is_not_saved(tmp_path, seeds):
    tasks = [replace(task, desc=f"seed {task.seed}") for task in _tasks("cnn", state_folder=tmp_path, lr=1e9)][:seeds]
    with pytest.raises(TrainingDiverged, match=r"^seed 0: training loss became (nan|-?inf) in epoch 1: "
                                               r"lower real\.lr \(now 1000000000\.0\)$"):
        train_batched(tasks, torch.device("cpu"), progress=False)
    assert not list(tmp_path.iterdir())


def test_stacked_seeds_refuse_per_image_forward_keywords():
    """The ensemble would hand a keyword to every seed whole: tokens kept per seed train one seed at a time."""
    stacked = StackedModels([seeded(seed, BUILDS["vit"]) for seed in SEEDS])
    with pytest.raises(ValueError, match="keep"):
        fit_batch(stacked, X, Y, CFG, epochs=1, seeds=SEEDS, token_keep=lambda batch: torch.zeros(len(batch), 2),
                  progress=False)
