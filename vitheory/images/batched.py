"""The image trainer: the recipe written once (vitheory.images.recipe's schedule and augmentation, AdamW,
BatchNorm in training mode, cross-entropy, the held-out evaluations, resume, the divergence check), for a
batch of seeds of one training.

`fit_batch` steps the seeds' weights as a `SeedBatch` holds them; only that differs between one seed and many:

- `OneModel`, a batch of one: the model itself, its parameters in one torch.optim.AdamW, its training step's
  forward through torch.compile where `real.compile_by_kind` switches it on. Every seed on a CPU trains so,
  one per worker process (training.run_tasks), and `fit` is this. It runs the ops of the model's own
  loop, to the bit (tests/images/test_batched.py holds it to such a loop, written out): its images as they
  come (a view adding the seed dimension can change a one-channel batch's strides, and with them the
  kernels a convolution picks); its loss `F.cross_entropy` vmapped over the one seed, whose gradient is the
  plain loss's to the bit (the loss's own value may differ in its last bit: only the divergence check reads it).
- `StackedModels`, a GPU's family of seeds: on CUDA a step of these small models is bound by kernel
  launches, so the tasks that share a model builder, recipe, epoch count and images (`batches`) train as
  one vitheory.core.ensemble.Ensemble (torch.func over weights stacked along a leading seed dimension).
  Each seed keeps what it would have alone: its initialisation, its own generator drawing its data order
  and augmentation in the same order, its own AdamW moments under the same warmup and cosine schedule
  (AdamW is elementwise: one torch.optim.AdamW over the stacked weights is every seed's own), its own
  BatchNorm statistics (stacked buffers). It ends at each seed's batch-of-one result to float tolerance,
  not to the bit: the batched kernels sum in another order. It runs eagerly: a kind that
  `real.compile_by_kind` compiles trains in batches of one. On a CPU run_tasks keeps one process per seed
  (a vmapped ensemble measured 0.94x there on two cores).

Resume: after every epoch each seed saves one vitheory.core.resume.RunState, in one format whatever its
batch, so a run resumes batched or alone; seeds saved after different epochs resume as separate batches.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import vmap
from tqdm import tqdm

from vitheory.core.device import seeded
from vitheory.core.ensemble import Ensemble
from vitheory.core.errors import TrainingDiverged
from vitheory.core.metrics import class_mistakes
from vitheory.core.resume import RunState
from vitheory.images.params import RecipeParams
from vitheory.images.recipe import (FitResult, FitTask, apply_augmentation, draw_augmentation, permute_pixels,
                                    warmup_cosine)

# torch.compile's on-disk cache (a warm one turns a 30-56 s compile into seconds): beside the stage locks
# and resume state, git-ignored and outside every DVC output; relative to the repository root, where
# stages run. TORCHINDUCTOR_CACHE_DIR, when set, wins.
INDUCTOR_CACHE = Path(".vitheory/inductor")
# per seed and epoch: the metrics to log ({} for none)
EpochLogs = Callable[[int], Sequence[dict[str, float]]]


def compiles(model_class: type[nn.Module], cfg: RecipeParams) -> bool:
    """Whether `cfg.compile_by_kind` switches torch.compile on for the model kind `model_class.KIND` (a class
    without one trains eager)."""
    kind = getattr(model_class, "KIND", None)
    return kind is not None and getattr(cfg.compile_by_kind, kind)


def compiled(model: nn.Module) -> Callable[..., torch.Tensor]:
    """`model`'s forward through torch.compile (inductor), one static graph per input shape (the last,
    smaller batch of an epoch is a second one): the same bytes on a repeat, warm cache or cold. Dynamo
    keys what it compiled on the forward's code and guards on shapes, not on the instance: a worker
    compiles a model kind once and reuses it for every later seed (tests/images/test_compile.py)."""
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(INDUCTOR_CACHE.resolve()))
    return torch.compile(model, dynamic=False)


def task_compiles(task: FitTask) -> bool:
    """Whether `task.cfg.compile_by_kind` switches torch.compile on for the kind of model the task builds
    (built on the meta device: no memory, no draw from the random generators)."""
    with torch.device("meta"):
        return compiles(type(task.build()), task.cfg)


class SeedBatch(Protocol):
    """The weights of a batch of S seeds, as `fit_batch` steps them; logits go as (S, B, classes)."""

    def __len__(self) -> int: ...

    def parameters(self) -> Sequence[torch.Tensor]: ...

    def train(self, mode: bool) -> None: ...

    def step_logits(self, images: torch.Tensor, **forward: torch.Tensor) -> torch.Tensor:
        """The training step's forward (compiled where `real.compile_by_kind` says so) of every seed's own
        images, (S * B, C, H, W) seed by seed, `forward` keywords (e.g. keep=...) alike."""

    def logits(self, x: torch.Tensor, **forward: torch.Tensor) -> torch.Tensor:
        """The evaluations' forward, eager, of the same images x (B, C, H, W) for every seed."""

    def weights(self, seed: int) -> dict[str, torch.Tensor]:
        """Seed `seed`'s state dict, in its model's order."""

    def load(self, weights: Sequence[dict[str, torch.Tensor]]) -> None:
        """Every seed's state dict into the batch."""

    def seed_optimizer(self, state: dict[str, Any], seed: int) -> dict[str, Any]:
        """Seed `seed`'s part of the batch's optimizer state dict: that of AdamW over its model alone."""

    def batch_optimizer(self, states: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The batch's optimizer state dict from every seed's."""


class OneModel:
    """A batch of one: the model itself; its training step through torch.compile when `compile_step`."""

    def __init__(self, model: nn.Module, compile_step: bool = False):
        self.model = model
        self.step = compiled(model) if compile_step else model  # shares model's parameters

    def __len__(self) -> int:
        return 1

    def parameters(self) -> Sequence[torch.Tensor]:
        return list(self.model.parameters())

    def train(self, mode: bool) -> None:
        self.model.train(mode)

    def step_logits(self, images: torch.Tensor, **forward: torch.Tensor) -> torch.Tensor:
        # the images as they come: a view that only adds the seed dimension can change the strides of a
        # size-1 dimension (one channel), and with them the kernels a convolution or BatchNorm picks
        return self.step(images, **forward)[None]

    def logits(self, x: torch.Tensor, **forward: torch.Tensor) -> torch.Tensor:
        return self.model(x, **forward)[None]

    def weights(self, seed: int) -> dict[str, torch.Tensor]:
        return self.model.state_dict()

    def load(self, weights: Sequence[dict[str, torch.Tensor]]) -> None:
        self.model.load_state_dict(weights[0])

    def seed_optimizer(self, state: dict[str, Any], seed: int) -> dict[str, Any]:
        return state

    def batch_optimizer(self, states: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return states[0]


class StackedModels:
    """Many seeds' models (one class and config) as one Ensemble: weights, buffers and AdamW moments stacked
    along a leading seed dimension; eager."""

    def __init__(self, models: Sequence[nn.Module]):
        self.names = list(models[0].state_dict())  # a model's own order of its weights
        self.ensemble = Ensemble(models)

    def __len__(self) -> int:
        return len(self.ensemble)

    def parameters(self) -> Sequence[torch.Tensor]:
        return list(self.ensemble.params.values())

    def train(self, mode: bool) -> None:
        self.ensemble.train(mode)

    def step_logits(self, images: torch.Tensor, **forward: torch.Tensor) -> torch.Tensor:
        _no_keywords(forward)
        return self.ensemble(images.unflatten(0, (len(self), -1)))

    def logits(self, x: torch.Tensor, **forward: torch.Tensor) -> torch.Tensor:
        _no_keywords(forward)
        return self.ensemble(x[None].expand(len(self), *x.shape))  # one input, read once

    def weights(self, seed: int) -> dict[str, torch.Tensor]:
        state = self.ensemble.state(seed)
        return {name: state[name] for name in self.names}

    @torch.no_grad()
    def load(self, weights: Sequence[dict[str, torch.Tensor]]) -> None:
        for name, stacked in {**self.ensemble.params, **self.ensemble.buffers}.items():
            stacked.copy_(torch.stack([seed[name] for seed in weights]))

    def seed_optimizer(self, state: dict[str, Any], seed: int) -> dict[str, Any]:
        return {"param_groups": state["param_groups"], "state": {
            index: {key: value if key == "step" else value[seed] for key, value in entry.items()}
            for index, entry in state["state"].items()}}

    def batch_optimizer(self, states: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return {"param_groups": states[0]["param_groups"], "state": {
            index: {key: value if key == "step" else torch.stack([s["state"][index][key] for s in states])
                    for key, value in entry.items()} for index, entry in states[0]["state"].items()}}


def _no_keywords(forward: dict[str, torch.Tensor]) -> None:
    if forward:
        raise ValueError(f"stacked seeds take no per-image forward keywords ({', '.join(forward)}): "
                         "train them one at a time")


class _Held:
    """Stands in for a model, optimiser or schedule in RunState's save and restore: one seed's state dict."""

    def __init__(self, state: dict[str, Any] | None = None):
        self.state = state

    def state_dict(self) -> dict[str, Any] | None:
        return self.state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.state = state


def _draws(generators: Sequence[torch.Generator], n: int, cfg: RecipeParams, device: torch.device
           ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """One epoch of every seed's draws from its generator, in this order: the data order, then per batch
    the augmentation's shifts and flips: order (seeds, N), shifts (seeds, N, 2) and flips (seeds, N),
    those of the image at order[s, k] at [s, k]; None where the recipe draws none."""
    orders, shifts, flips = [], [], []
    for generator in generators:
        orders.append(torch.randperm(n, generator=generator))
        drawn = [draw_augmentation(min(cfg.batch_size, n - start), cfg.shift, cfg.hflip, generator)
                 for start in range(0, n, cfg.batch_size)]
        shifts += [torch.cat([shift for shift, _ in drawn])] if cfg.shift else []
        flips += [torch.cat([flip for _, flip in drawn])] if cfg.hflip else []
    return tuple(torch.stack(draws).to(device) if draws else None for draws in (orders, shifts, flips))


def _restore(batch: SeedBatch, optimizer: torch.optim.Optimizer, schedule: torch.optim.lr_scheduler.LRScheduler,
             generators: Sequence[torch.Generator], states: Sequence[RunState | None]) -> int:
    """Load the seeds' saved states (all after one epoch) into the batch; the epochs already done."""
    if not states[0] or not states[0].epoch:
        return 0
    held = [(_Held(), _Held(), _Held()) for _ in states]
    for state, (model, seed_optimizer, seed_schedule), generator in zip(states, held, generators):
        state.restore(model, seed_optimizer, seed_schedule, generator)
    batch.load([model.state for model, _, _ in held])
    optimizer.load_state_dict(batch.batch_optimizer([seed_optimizer.state for _, seed_optimizer, _ in held]))
    schedule.load_state_dict(held[0][2].state)
    return states[0].epoch


def fit_batch(batch: SeedBatch, x: torch.Tensor, y: torch.Tensor, cfg: RecipeParams, *, epochs: int,
              seeds: Sequence[int], permutation: torch.Tensor | None = None,
              token_keep: Callable[[torch.Tensor], torch.Tensor] | None = None, on_epoch: EpochLogs | None = None,
              states: Sequence[RunState | None] | None = None, progress: bool = True,
              descs: Sequence[str] = ("train",)) -> None:
    """Train the batch's seeds in place for `epochs` on normalised images x (on the batch's device), seed i
    drawing its data order and augmentation from its own generator, seeded `seeds[i]`.

    AdamW with a linear warmup and a cosine learning-rate schedule, light augmentation (random shifts, optional
    horizontal flips), cross-entropy. A fixed pixel permutation, when given, is applied after augmentation.
    `token_keep(images) -> (B, k)`, each seed's, trains with sparsified tokens (the model must accept `keep`).
    `on_epoch(epoch)` returns each seed's metrics to log after each epoch. With `states` (one per seed, None
    for a seed saved nowhere) training starts from their last saved epoch, the same for all, and each seed
    saves after each epoch, with its metrics: a resumed run ends with the same bytes as an uninterrupted one.
    Raises TrainingDiverged, naming the seed by its `descs` entry, when a seed's loss was not finite in an
    epoch (after that epoch, before it is saved: checked once an epoch, the GPU waits on no step).
    """
    states = states or [None] * len(batch)
    generators = [torch.Generator().manual_seed(seed) for seed in seeds]
    optimizer = torch.optim.AdamW(batch.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    steps_per_epoch = math.ceil(len(y) / cfg.batch_size)
    total = epochs * steps_per_epoch
    warmup = min(cfg.warmup_epochs * steps_per_epoch, total - 1)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(warmup, total))
    done = _restore(batch, optimizer, schedule, generators, states)
    desc = descs[0] if len(batch) == 1 else f"{descs[0]} ({len(batch)} seeds)"
    for epoch in tqdm(range(done + 1, epochs + 1), desc=desc, disable=not progress, mininterval=1.0,
                      initial=done, total=epochs):
        batch.train(True)
        order, shift, flip = _draws(generators, len(y), cfg, x.device)
        first_bad = torch.zeros(len(batch), device=x.device)  # each seed's first non-finite loss, 0 if none
        finite = torch.ones(len(batch), dtype=torch.bool, device=x.device)
        for start in range(0, len(y), cfg.batch_size):
            part = slice(start, start + cfg.batch_size)
            index = order[:, part]  # (seeds, B)
            images = apply_augmentation(x[index.flatten()], cfg.shift,
                                        None if shift is None else shift[:, part].flatten(0, 1),
                                        None if flip is None else flip[:, part].flatten())
            images = permute_pixels(images, permutation)  # (seeds * B, C, H, W)
            keep = {"keep": torch.cat([token_keep(seed) for seed in images.chunk(len(batch))])} if token_keep else {}
            loss = vmap(F.cross_entropy)(batch.step_logits(images, **keep), y[index])
            first_bad = torch.where(finite & ~torch.isfinite(loss), loss.detach(), first_bad)
            finite &= torch.isfinite(loss)
            optimizer.zero_grad()
            loss.sum().backward()  # each seed's weights get their own loss's gradient
            optimizer.step()
            schedule.step()
        if not finite.all():
            i = int((~finite).nonzero()[0])
            raise TrainingDiverged(f"{descs[i]}: training loss became {first_bad[i].item()} in epoch {epoch}: "
                                   f"lower real.lr (now {cfg.lr})")
        metrics = on_epoch(epoch) if on_epoch else [{}] * len(batch)
        stacked = optimizer.state_dict()
        for i, state in enumerate(states):
            if state:
                state.save(epoch, metrics[i], _Held(batch.weights(i)), _Held(batch.seed_optimizer(stacked, i)),
                           schedule, generators[i])


@torch.no_grad()
def evaluate_batch(batch: SeedBatch, x: torch.Tensor, y: torch.Tensor, batch_size: int = 512,
                   **forward: torch.Tensor) -> list[dict[str, float]]:
    """Per seed, cross-entropy and accuracy on normalised images x, the same for every seed; `forward`
    keywords are sliced with the batch (e.g. keep=...). A NaN logit is a mistake."""
    batch.train(False)
    seeds = len(batch)
    loss, correct = [0.0] * seeds, [0] * seeds
    for start in range(0, len(y), batch_size):
        part = slice(start, start + batch_size)
        logits = batch.logits(x[part], **{name: value[part] for name, value in forward.items()})
        # per seed, as one model's loss sums: a vmapped sum adds in another order
        summed = torch.stack([F.cross_entropy(seed_logits, y[part], reduction="sum") for seed_logits in logits])
        loss = [a + b for a, b in zip(loss, summed.tolist())]
        correct = [a + b for a, b in zip(correct, (~class_mistakes(logits, y[part])).sum(1).tolist())]
    return [{"loss": loss[i] / len(y), "accuracy": correct[i] / len(y)} for i in range(seeds)]


def fit_tasks(tasks: Sequence[FitTask], states: Sequence[RunState | None], device: torch.device,
              progress: bool = True) -> list[FitResult]:
    """Tasks of one batch (see `batches`), their states saved after the same epoch, as one `fit_batch`: a
    batch of one for a single task; each seed's held-out splits evaluated every `eval_every` epochs and after
    the last, logged per epoch as `<log_prefix><split>/<metric>` ({} between evaluations)."""
    first = tasks[0]
    models = [seeded(task.seed, task.build).to(device) for task in tasks]
    batch = OneModel(models[0], compiles(type(models[0]), first.cfg)) if len(models) == 1 else StackedModels(models)
    permutation = None if first.permutation is None else first.permutation.to(device)
    held_out = {name: (permute_pixels(x.to(device), permutation), y.to(device))
                for name, (x, y) in first.held_out.items()}
    logs = [list(state.log) if state else [] for state in states]
    if states[0] and states[0].epoch:
        more = f" and {len(tasks) - 1} more seeds" if len(tasks) > 1 else ""
        print(f"{first.desc}{more}: resuming after epoch {states[0].epoch} of {first.epochs}", file=sys.stderr)
    last: list[dict[str, dict[str, float]]] = []  # per seed, held-out split -> metrics at the latest evaluation

    def evaluated() -> list[dict[str, dict[str, float]]]:
        splits = {name: evaluate_batch(batch, x, y) for name, (x, y) in held_out.items()}
        return [{name: split[i] for name, split in splits.items()} for i in range(len(tasks))]

    def evaluate_and_log(epoch: int) -> list[dict[str, float]]:
        due = epoch % first.cfg.eval_every == 0 or epoch == first.epochs
        if due:
            last[:] = evaluated()
        metrics = [{f"{task.log_prefix}{name}/{metric}": value for name, split in last[i].items()
                    for metric, value in split.items()} if due else {} for i, task in enumerate(tasks)]
        for log, seed_metrics in zip(logs, metrics):
            log.append(seed_metrics)
        return metrics

    fit_batch(batch, first.x.to(device), first.y.to(device), first.cfg, epochs=first.epochs,
              seeds=[task.seed for task in tasks], permutation=permutation,
              on_epoch=evaluate_and_log if held_out else None, states=states, progress=progress,
              descs=[task.desc for task in tasks])
    # the last epoch's evaluation is the final one: evaluated again only for a run resumed after its last epoch
    final = last or evaluated()
    return [FitResult({name: t.cpu() for name, t in batch.weights(i).items()}, logs[i], final[i])
            for i in range(len(tasks))]


def _same(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    """The same tensor, or one of the same shape and values (None only with None)."""
    if a is None or b is None:
        return a is b
    return a is b or (a.shape == b.shape and torch.equal(a, b))


def _batchable(a: FitTask, b: FitTask) -> bool:
    """Whether two tasks differ in their seeds and logs only, and their kind trains eager."""
    return (a.build is b.build and a.cfg == b.cfg and a.epochs == b.epochs and _same(a.x, b.x) and _same(a.y, b.y)
            and _same(a.permutation, b.permutation) and a.held_out.keys() == b.held_out.keys()
            and all(_same(*pair) for name in a.held_out for pair in zip(a.held_out[name], b.held_out[name]))
            and not task_compiles(a))


def batches(tasks: Sequence[FitTask]) -> list[list[int]]:
    """The tasks, by index, in groups that train as one batch: same builder (the same object), recipe,
    epochs, images, permutation and held-out splits, a kind that trains eager (one that compiles trains
    alone: what is compiled is its model's forward, not the stack's)."""
    groups: list[list[int]] = []
    for i, task in enumerate(tasks):
        group = next((g for g in groups if _batchable(tasks[g[0]], task)), None)
        if group is None:
            groups.append([i])
        else:
            group.append(i)
    return groups


def train_batched(tasks: Sequence[FitTask], device: torch.device, progress: bool = True) -> list[FitResult]:
    """Every task, each group of `batches` as one batch (the seeds of one group whose resume states stopped
    after different epochs as one batch per epoch); results in order of `tasks`."""
    states = [RunState(*task.state) if task.state else None for task in tasks]
    results: list[FitResult | None] = [None] * len(tasks)
    for group in batches(tasks):
        by_epoch: dict[int, list[int]] = {}
        for i in group:
            by_epoch.setdefault(states[i].epoch if states[i] else 0, []).append(i)
        for members in by_epoch.values():
            trained = fit_tasks([tasks[i] for i in members], [states[i] for i in members], device, progress)
            for i, result in zip(members, trained):
                results[i] = result
    return results
