"""The seeds of one image training as one batched model, for a GPU.

On CUDA a step of these small models is bound by kernel launches, so `run_tasks` trains the tasks
that share a model builder, recipe, epoch count and images (a family's seeds) as one stacked model
(vitheory.core.ensemble.Ensemble: torch.func over weights stacked along a leading seed dimension).
Each seed keeps what `fit` gives it alone: its initialisation, its own generator drawing its data order
and augmentation in `fit`'s order, its own AdamW moments under the same warmup and cosine schedule
(AdamW is elementwise: one torch.optim.AdamW over the stacked weights is every seed's own), its own
BatchNorm statistics (stacked buffers). It ends at each seed's `fit` result to float tolerance, not to
the bit: the batched kernels sum in another order (tests/images/test_batched.py). On a CPU run_tasks
keeps one process per seed (a vmapped ensemble measured 0.94x there on two cores).

Resume: after every epoch each seed saves the RunState `fit` saves, in its format, so a run resumes
batched or alone; seeds saved after different epochs resume as separate batches. The step runs
eagerly: with `real.compile_by_kind` run_tasks keeps the per-seed path.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch.func import vmap
from tqdm import tqdm

from vitheory.core.device import seeded
from vitheory.core.ensemble import Ensemble
from vitheory.core.errors import TrainingDiverged
from vitheory.core.metrics import class_mistakes
from vitheory.core.resume import RunState
from vitheory.images.recipe import (FitResult, FitTask, apply_augmentation, draw_augmentation, permute_pixels,
                                    warmup_cosine)


def _same(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    """The same tensor, or one of the same shape and values (None only with None)."""
    if a is None or b is None:
        return a is b
    return a is b or (a.shape == b.shape and torch.equal(a, b))


def _batchable(a: FitTask, b: FitTask) -> bool:
    """Whether two tasks differ in their seeds and logs only."""
    return (a.build is b.build and a.cfg == b.cfg and a.epochs == b.epochs and _same(a.x, b.x) and _same(a.y, b.y)
            and _same(a.permutation, b.permutation) and a.held_out.keys() == b.held_out.keys()
            and all(_same(*pair) for name in a.held_out for pair in zip(a.held_out[name], b.held_out[name])))


def batches(tasks: Sequence[FitTask]) -> list[list[int]]:
    """The tasks, by index, in groups that train as one batch: same builder (the same object), recipe,
    epochs, images, permutation and held-out splits."""
    groups: list[list[int]] = []
    for i, task in enumerate(tasks):
        group = next((g for g in groups if _batchable(tasks[g[0]], task)), None)
        if group is None:
            groups.append([i])
        else:
            group.append(i)
    return groups


def train_batched(tasks: Sequence[FitTask], device: torch.device, progress: bool = True) -> list[FitResult]:
    """Every task, each group of `batches` as one batched model (the seeds of one group whose resume
    states stopped after different epochs as one batch per epoch); results in order of `tasks`."""
    results: list[FitResult | None] = [None] * len(tasks)
    for group in batches(tasks):
        states = {i: RunState(*tasks[i].state) if tasks[i].state else None for i in group}
        by_epoch: dict[int, list[int]] = {}
        for i in group:
            by_epoch.setdefault(states[i].epoch if states[i] else 0, []).append(i)
        for members in by_epoch.values():
            trained = BatchedFit([tasks[i] for i in members], [states[i] for i in members], device).run(progress)
            for i, result in zip(members, trained):
                results[i] = result
    return results


class _Held:
    """Stands in for a model, optimiser or schedule in RunState's save and restore: one seed's state dict."""

    def __init__(self, state: dict[str, Any] | None = None):
        self.state = state

    def state_dict(self) -> dict[str, Any] | None:
        return self.state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.state = state


class BatchedFit:
    """`fit` and run_task's evaluations for tasks of one batch (see `batches`), all at the same saved epoch."""

    def __init__(self, tasks: Sequence[FitTask], states: Sequence[RunState | None], device: torch.device):
        first = tasks[0]
        self.tasks, self.states, self.cfg, self.epochs = tasks, states, first.cfg, first.epochs
        models = [seeded(task.seed, task.build).to(device) for task in tasks]
        self.names = list(models[0].state_dict())  # a model's own order of its weights
        self.ensemble = Ensemble(models)
        self.optimizer = torch.optim.AdamW(self.ensemble.params.values(), lr=self.cfg.lr,
                                           weight_decay=self.cfg.weight_decay)
        steps_per_epoch = math.ceil(len(first.y) / self.cfg.batch_size)
        total = self.epochs * steps_per_epoch
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, warmup_cosine(min(self.cfg.warmup_epochs * steps_per_epoch, total - 1), total))
        self.generators = [torch.Generator().manual_seed(task.seed) for task in tasks]
        self.x, self.y = first.x.to(device), first.y.to(device)
        self.permutation = None if first.permutation is None else first.permutation.to(device)
        self.held_out = {name: (permute_pixels(x.to(device), self.permutation), y.to(device)) for name, (x, y) in first.held_out.items()}
        self.logs = [list(state.log) if state else [] for state in states]

    def run(self, progress: bool) -> list[FitResult]:
        done = self.restore()
        if done:
            print(f"{self.tasks[0].desc} and {len(self.tasks) - 1} more seeds: resuming after epoch {done} of "
                  f"{self.epochs}", file=sys.stderr)
        last: list[dict[str, dict[str, float]]] = []  # per seed, held-out split -> metrics at the latest evaluation
        for epoch in tqdm(range(done + 1, self.epochs + 1), desc=f"{self.tasks[0].desc} ({len(self.tasks)} seeds)",
                          disable=not progress, mininterval=1.0, initial=done, total=self.epochs):
            self.train_epoch(epoch)
            due = bool(self.held_out) and (epoch % self.cfg.eval_every == 0 or epoch == self.epochs)
            if due:
                last = self.evaluate()
            metrics = [{f"{task.log_prefix}{name}/{metric}": value for name, split in last[i].items()
                        for metric, value in split.items()} if due else {} for i, task in enumerate(self.tasks)]
            if self.held_out:
                for log, seed_metrics in zip(self.logs, metrics):
                    log.append(seed_metrics)
            self.save(epoch, metrics)
        # the last epoch's evaluation is the final one: evaluated again only for a run resumed after its last epoch
        final = last or self.evaluate()
        return [FitResult({name: t.cpu() for name, t in self.weights(i).items()}, self.logs[i], final[i])
                for i in range(len(self.tasks))]

    def weights(self, i: int) -> dict[str, torch.Tensor]:
        """Seed i's state dict, in its model's order."""
        state = self.ensemble.state(i)
        return {name: state[name] for name in self.names}

    def draws(self) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """One epoch of every seed's draws from its generator, in `fit`'s order (the data order, then per
        batch augment's shifts and flips): order (seeds, N), shifts (seeds, N, 2) and flips (seeds, N),
        those of the image at order[s, k] at [s, k]; None where the recipe draws none."""
        cfg, n = self.cfg, len(self.y)
        orders, shifts, flips = [], [], []
        for generator in self.generators:
            orders.append(torch.randperm(n, generator=generator))
            drawn = [draw_augmentation(min(cfg.batch_size, n - start), cfg.shift, cfg.hflip, generator)
                     for start in range(0, n, cfg.batch_size)]
            shifts += [torch.cat([shift for shift, _ in drawn])] if cfg.shift else []
            flips += [torch.cat([flip for _, flip in drawn])] if cfg.hflip else []
        return tuple(torch.stack(draws).to(self.x.device) if draws else None for draws in (orders, shifts, flips))

    def train_epoch(self, epoch: int) -> None:
        """One epoch of every seed; raises TrainingDiverged, after it, when a seed's loss was not finite."""
        self.ensemble.train(True)
        order, shift, flip = self.draws()
        seeds, n = order.shape
        first_bad = torch.zeros(seeds, device=self.x.device)  # each seed's first non-finite loss, 0 if none
        finite = torch.ones(seeds, dtype=torch.bool, device=self.x.device)
        for start in range(0, n, self.cfg.batch_size):
            part = slice(start, start + self.cfg.batch_size)
            index = order[:, part]  # (seeds, B)
            images = apply_augmentation(self.x[index].flatten(0, 1), self.cfg.shift,
                                        None if shift is None else shift[:, part].flatten(0, 1),
                                        None if flip is None else flip[:, part].flatten())
            images = permute_pixels(images, self.permutation).unflatten(0, index.shape)
            loss = vmap(F.cross_entropy)(self.ensemble(images), self.y[index])
            first_bad = torch.where(finite & ~torch.isfinite(loss), loss.detach(), first_bad)
            finite &= torch.isfinite(loss)
            self.optimizer.zero_grad()
            loss.sum().backward()  # each seed's weights get their own loss's gradient
            self.optimizer.step()
            self.schedule.step()
        if not finite.all():
            i = int((~finite).nonzero()[0])
            raise TrainingDiverged(f"{self.tasks[i].desc}: training loss became {first_bad[i].item()} in epoch "
                                   f"{epoch}: lower real.lr (now {self.cfg.lr})")

    @torch.no_grad()
    def evaluate(self, batch_size: int = 512) -> list[dict[str, dict[str, float]]]:
        """Per seed, training.evaluate's loss and accuracy on every held-out split."""
        self.ensemble.train(False)
        seeds = len(self.tasks)
        metrics: list[dict[str, dict[str, float]]] = [{} for _ in range(seeds)]
        summed = vmap(lambda logits, y: F.cross_entropy(logits, y, reduction="sum"), in_dims=(0, None))
        for name, (x, y) in self.held_out.items():
            loss, correct = [0.0] * seeds, [0] * seeds
            for start in range(0, len(y), batch_size):
                part = slice(start, start + batch_size)
                logits = self.ensemble(x[part][None].expand(seeds, *x[part].shape))  # one input, read once
                loss = [a + b for a, b in zip(loss, summed(logits, y[part]).tolist())]
                correct = [a + b for a, b in zip(correct, (~class_mistakes(logits, y[part])).sum(1).tolist())]
            for i in range(seeds):
                metrics[i][name] = {"loss": loss[i] / len(y), "accuracy": correct[i] / len(y)}
        return metrics

    def restore(self) -> int:
        """Load the seeds' saved states (all after one epoch) into the batch; the epochs already done."""
        if not self.states[0] or not self.states[0].epoch:
            return 0
        held = [(_Held(), _Held(), _Held()) for _ in self.states]
        for state, (model, optimizer, schedule), generator in zip(self.states, held, self.generators):
            state.restore(model, optimizer, schedule, generator)
        with torch.no_grad():
            for name, stacked in {**self.ensemble.params, **self.ensemble.buffers}.items():
                stacked.copy_(torch.stack([model.state[name] for model, _, _ in held]))
        saved = [optimizer.state for _, optimizer, _ in held]
        self.optimizer.load_state_dict({"param_groups": saved[0]["param_groups"], "state": {
            index: {key: value if key == "step" else torch.stack([s["state"][index][key] for s in saved])
                    for key, value in entry.items()} for index, entry in saved[0]["state"].items()}})
        self.schedule.load_state_dict(held[0][2].state)
        return self.states[0].epoch

    def save(self, epoch: int, metrics: Sequence[dict[str, float]]) -> None:
        """Every seed's state after `epoch`, as `fit` saves it, with that epoch's logged metrics."""
        stacked = self.optimizer.state_dict()
        for i, state in enumerate(self.states):
            if state is None:
                continue
            optimizer = {"param_groups": stacked["param_groups"], "state": {
                index: {key: value if key == "step" else value[i] for key, value in entry.items()}
                for index, entry in stacked["state"].items()}}
            state.save(epoch, metrics[i], _Held(self.weights(i)), _Held(optimizer),
                       self.schedule, self.generators[i])
