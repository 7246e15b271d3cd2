"""Training many small models at once: an ensemble with stacked weights.

The figures of [LI23] need hundreds of independent trainings (grid cell x seed). Here E models of
one class are trained together: their weights are stacked along a leading member dimension and one
forward/backward pass (`torch.func.vmap` over `functional_call`) serves them all. Each member has
its own training set and size, its own seed (initialisation, mini-batches, token sampling) and its
own stopping, so a member ends with the weights it would have had trained alone (to float
tolerance). A single training run is an ensemble of one.

The stability rule (`train_stable`): gradient flow never raises the loss, so a loss that turns non-finite
is an artefact of the step size, not an outcome of what is trained. A member that diverges trains again
from its own seed at half the rates and twice the steps (the same time horizon, rate x steps), up to
`Stability.max_halvings` times; one that diverges at every rate tried is unstable, and says so.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol, runtime_checkable

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, stack_module_state, vmap
from tqdm import tqdm

from vitheory.core.config import Section, at_least, knob
from vitheory.core.errors import TrainingDiverged
from vitheory.core.metrics import sign_mistakes


@runtime_checkable
class Member(Protocol):
    """What `train_ensemble` needs of a member beyond nn.Module's forward ((B, ...) inputs -> (B,)
    outputs): the learning-rate group of each parameter, by its name (keys of `EnsembleRecipe.lr`)."""

    def param_group(self, name: str) -> str: ...


class Ensemble:
    """E models of one class with stacked weights: `params[name]` has shape (E, *shape), as do the
    buffers (a BatchNorm's running statistics are each member's own)."""

    def __init__(self, models: Sequence[nn.Module]):
        params, buffers = stack_module_state(list(models))
        self.params = {name: p.detach().requires_grad_() for name, p in params.items()}
        self.buffers = buffers
        self._template = copy.deepcopy(models[0]).to("meta")

    def __len__(self) -> int:
        return next(iter(self.params.values())).shape[0]

    def __call__(self, x: torch.Tensor, members: torch.Tensor | None = None, **kwargs):
        """x (E, B, ...) -> the model's output per member, (E, B, ...). With `members` (indices),
        x holds only those members' inputs and only they are computed (and get gradients)."""
        def one(params, buffers, inputs):
            return functional_call(self._template, (params, buffers), (inputs,), kwargs)

        params, buffers = self.params, self.buffers
        if members is not None:
            params = {name: p[members] for name, p in params.items()}
            buffers = {name: b[members] for name, b in buffers.items()}
        if x.dim() and x.stride(0) == 0:  # one input expanded over members: read it once, not E times
            return vmap(one, in_dims=(0, 0, None))(params, buffers, x[0])
        return vmap(one)(params, buffers, x)

    def train(self, mode: bool = True) -> Ensemble:
        """Training or evaluation mode for every member (BatchNorm's batch or running statistics)."""
        self._template.train(mode)
        return self

    def group(self, name: str) -> str:
        if not isinstance(self._template, Member):
            raise TypeError(f"{type(self._template).__name__} has no param_group(name): train_ensemble needs each "
                            "parameter's learning-rate group (vitheory.core.ensemble.Member)")
        return self._template.param_group(name)

    def state(self, index: int) -> dict[str, torch.Tensor]:
        """Member `index`'s parameters and buffers, by name: a state dict of one model."""
        return {name: t[index].detach() for name, t in {**self.params, **self.buffers}.items()}

    @torch.no_grad()
    def put(self, index: int, other: Ensemble, source: int) -> None:
        """Member `index` takes the weights and buffers of `other`'s member `source` (same class and config)."""
        for mine, theirs in ((self.params, other.params), (self.buffers, other.buffers)):
            for name, t in mine.items():
                t[index] = theirs[name][source]

    def member(self, index: int, model: nn.Module) -> nn.Module:
        """`model` (same class and config) with the weights of member `index`."""
        model.load_state_dict({name: t.clone() for name, t in self.state(index).items()})
        return model.eval()


@dataclass(frozen=True)
class Stacked:
    """Training data of E members, padded to the largest set: X (E, N_max, ...), y (E, N_max) in
    {-1, +1} float, n (E,) the size of each member's own set (rows past it are padding)."""

    X: torch.Tensor
    y: torch.Tensor
    n: torch.Tensor

    @staticmethod
    def pad(sets: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> Stacked:
        n_max = max(len(x) for x, _ in sets)
        X = torch.zeros(len(sets), n_max, *sets[0][0].shape[1:])
        y = torch.zeros(len(sets), n_max)
        for i, (x_i, y_i) in enumerate(sets):
            X[i, :len(x_i)], y[i, :len(y_i)] = x_i, y_i.float()
        return Stacked(X, y, torch.tensor([len(x) for x, _ in sets]))

    def to(self, device: torch.device) -> Stacked:
        return Stacked(self.X.to(device), self.y.to(device), self.n.to(device))

    def select(self, members: Sequence[int]) -> Stacked:
        """The sets of `members` only. A set expanded over every member stays one set, not copied: the
        ensemble then reads it once (`Ensemble.__call__`)."""
        index = torch.tensor(list(members), device=self.X.device)

        def rows(t: torch.Tensor) -> torch.Tensor:
            return t[:1].expand(len(index), *t.shape[1:]) if t.stride(0) == 0 else t[index]

        return Stacked(rows(self.X), rows(self.y), self.n[index])


@dataclass(frozen=True)
class EnsembleRecipe:
    """How `train_ensemble` trains every member: its steps and batches, its optimiser (SGD or Adam) and rates,
    its loss, and when a member stops."""

    steps: int
    batch_size: int | None  # None: full-batch gradient descent, each member on its whole set
    lr: dict[str, float]  # learning rate per parameter group (the model's `param_group`); 0 freezes it
    eval_every: int  # full-training-set check for zero loss / zero error
    token_fraction: float = 1.0
    loss: Literal["hinge", "logistic"] = "hinge"
    stop_at_zero_loss: bool = True  # a member whose hinge loss is 0 on all its data has zero gradient
    stop_diverged: bool = False  # freeze a member whose loss turns non-finite instead of raising
    max_halvings: int = 0  # with stop_diverged, `train_stable`'s retrainings of a diverged member at half the rates
    lr_keys: dict[str, str] | None = None  # params key of each group's rate, named when a run diverges
    optimizer: Literal["sgd", "adam"] = "sgd"  # adam: betas (0.9, 0.999), eps 1e-8, per member


@dataclass(frozen=True)
class Stability(Section):
    """params.yaml `train.stability`: the stability rule of every synthetic trainer that can diverge
    (`train_stable`)."""

    max_halvings: int = knob(at_least(0))


@dataclass(frozen=True)
class Outcome:
    """Per member: steps run, first checked step with zero training error and with zero test error (-1:
    never, or no test data given), all of its last training (after `halvings` halvings of the rates, its
    steps doubled as often); whether its loss was non-finite there too, `unstable` (only with
    `EnsembleRecipe.stop_diverged`)."""

    steps_run: list[int]
    steps_to_zero_train_error: list[int]
    steps_to_zero_test_error: list[int]
    unstable: list[bool]
    halvings: list[int]


def hinge(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.relu(1 - y * out)


def logistic(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.softplus(-y * out)


LOSSES = {"hinge": hinge, "logistic": logistic}
TEST_SCREEN = 64  # test examples checked first for zero test error (train_ensemble)
ADAM_BETAS, ADAM_EPS = (0.9, 0.999), 1e-8


def _valid_rows(y: torch.Tensor, n: torch.Tensor | None) -> torch.Tensor:
    """(E, N) mask of each member's own rows (the first n[i]; all when n is None)."""
    if n is None:
        return torch.ones_like(y, dtype=torch.bool)
    return torch.arange(y.shape[1], device=y.device)[None] < n[:, None]


@torch.no_grad()
def loss_and_error(ensemble: Ensemble, X: torch.Tensor, y: torch.Tensor, n: torch.Tensor | None = None,
                   members: torch.Tensor | None = None, loss: str = "hinge") -> tuple[torch.Tensor, torch.Tensor]:
    """Mean loss and 0-1 error per member, over the first n[i] rows of member i's set; with
    `members`, X, y and n hold only those members' rows."""
    out = ensemble(X, members=members)
    valid = _valid_rows(y, n)
    count = valid.sum(1)
    mean_loss = LOSSES[loss](out, y).where(valid, 0).sum(1) / count
    error = sign_mistakes(out, y).where(valid, False).sum(1) / count
    return mean_loss, error


def subsample_tokens(x: torch.Tensor, fraction: float, generator: torch.Generator) -> torch.Tensor:
    """Keep a random round(fraction * L) of each example's tokens (the theory's token sampling),
    x (B, L, d)."""
    n, length, _ = x.shape
    keep = max(1, round(fraction * length))
    if keep == length:
        return x
    order = torch.argsort(torch.rand(n, length, generator=generator), dim=1)[:, :keep]
    return x.gather(1, order.to(x.device)[..., None].expand(-1, -1, x.shape[-1]))


def choose_batch(data: Stacked, live: torch.Tensor, cfg: EnsembleRecipe, generators: Sequence[torch.Generator]
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One step's inputs, labels and scored rows (x, y, valid) for the `live` members: each one's whole
    set (full batch) or `cfg.batch_size` rows drawn from it by its own generator, which then also
    subsamples its tokens (`cfg.token_fraction`)."""
    if cfg.batch_size is None and len(live) == len(data.n):  # no copy: the data may be one set expanded E times
        x, y, valid = data.X, data.y, _valid_rows(data.y, data.n)
    elif cfg.batch_size is None:
        x, y, valid = data.X[live], data.y[live], _valid_rows(data.y[live], data.n[live])
    else:
        idx = torch.stack([torch.randint(0, int(data.n[i]), (cfg.batch_size,), generator=generators[i])
                           for i in live.tolist()]).to(data.X.device)
        x, y = data.X[live[:, None], idx], data.y[live[:, None], idx]  # (E_live, B, ...)
        valid = torch.ones_like(y, dtype=torch.bool)
    if cfg.token_fraction < 1:
        x = torch.stack([subsample_tokens(x[j], cfg.token_fraction, generators[i])
                         for j, i in enumerate(live.tolist())])
    return x, y, valid


class MemberStep:
    """The optimiser of every member at once: SGD, or Adam with per-member moments and step counts,
    each parameter at its group's rate (`EnsembleRecipe.lr`); a member not moving keeps all of it as it is."""

    def __init__(self, ensemble: Ensemble, cfg: EnsembleRecipe):
        self.params = list(ensemble.params.values())
        self.rates = [cfg.lr[ensemble.group(name)] for name in ensemble.params]
        self.adam = cfg.optimizer == "adam"
        self.first = [torch.zeros_like(p) for p in self.params]
        self.second = [torch.zeros_like(p) for p in self.params]
        self.count = [torch.zeros(len(ensemble), device=p.device) for p in self.params]

    @torch.no_grad()
    def __call__(self, grads: Sequence[torch.Tensor], moving: torch.Tensor) -> None:
        """One step from each parameter's gradient `grads`; `moving` (E,) bool, the members that step."""
        for k, (p, g, lr) in enumerate(zip(self.params, grads, self.rates)):
            shape = (-1, *[1] * (g.dim() - 1))
            moves = moving.view(shape)
            if not self.adam:
                p.sub_(lr * g.where(moves, 0))
                continue
            self.first[k].lerp_(g, torch.where(moves, 1 - ADAM_BETAS[0], 0.0))
            self.second[k].lerp_(g * g, torch.where(moves, 1 - ADAM_BETAS[1], 0.0))
            self.count[k] += moves.squeeze()
            corrected = (self.first[k] / (1 - ADAM_BETAS[0] ** self.count[k].clamp(min=1)).view(shape)) / (
                (self.second[k] / (1 - ADAM_BETAS[1] ** self.count[k].clamp(min=1)).view(shape)).sqrt() + ADAM_EPS)
            p.sub_(lr * corrected.where(moves, 0))


class Stopping:
    """Which members still train, and per member what the `Outcome` reports. A member stops at a check
    where its loss is zero on all its data (`EnsembleRecipe.stop_at_zero_loss`: its gradient is zero) or at
    a step where its loss turns non-finite (`EnsembleRecipe.stop_diverged`)."""

    def __init__(self, ensemble: Ensemble, data: Stacked, test: Stacked | None, cfg: EnsembleRecipe):
        self.ensemble, self.data, self.test, self.cfg = ensemble, data, test, cfg
        E = len(ensemble)
        self.active = torch.ones(E, dtype=torch.bool, device=data.X.device)
        self.outcome = Outcome([cfg.steps] * E, [-1] * E, [-1] * E, [False] * E, [0] * E)

    def live(self) -> torch.Tensor:
        """Indices of the members that still train (members that stopped cost nothing)."""
        return self.active.nonzero().squeeze(1)

    def check(self, step: int) -> None:
        """Record zero training (and test) error, and stop the members with zero loss."""
        # a stopped member has zero loss, hence zero error already recorded: only live ones are checked
        live, data = self.live(), self.data
        loss, error = loss_and_error(self.ensemble, data.X[live], data.y[live], data.n[live], members=live,
                                     loss=self.cfg.loss)
        if self.test is not None:
            self._check_test(step)
        for j, i in enumerate(live.tolist()):
            if self.outcome.steps_to_zero_train_error[i] < 0 and error[j] == 0:
                self.outcome.steps_to_zero_train_error[i] = step
            if self.cfg.stop_at_zero_loss and loss[j] == 0:
                self.active[i], self.outcome.steps_run[i] = False, step

    def _check_test(self, step: int) -> None:
        """Record the step for live members that reach zero test error now. Exact and cheap: a member
        with an error among its first TEST_SCREEN test examples cannot have zero test error, so only
        the others are evaluated on their whole test set."""
        reached, test = self.outcome.steps_to_zero_test_error, self.test
        waiting = [i for i in self.live().tolist() if reached[i] < 0]
        if not waiting:
            return
        members = torch.tensor(waiting, device=self.active.device)
        screen = min(TEST_SCREEN, test.X.shape[1])
        _, screened = loss_and_error(self.ensemble, test.X[members, :screen], test.y[members, :screen],
                                     test.n[members].clamp(max=screen), members=members, loss=self.cfg.loss)
        members = members[screened == 0]
        if len(members):
            _, error = loss_and_error(self.ensemble, test.X[members], test.y[members], test.n[members],
                                      members=members, loss=self.cfg.loss)
            for i in members[error == 0].tolist():
                reached[i] = step

    def freeze_diverged(self, live: torch.Tensor, finite: torch.Tensor, step: int) -> None:
        """Stop the live members whose loss at `step` is not finite (`finite` (E_live,)), where they were."""
        for i in live[~finite].tolist():
            self.active[i], self.outcome.steps_run[i], self.outcome.unstable[i] = False, step - 1, True


def _diverged(desc: str, loss: torch.Tensor, live: torch.Tensor, step: int, seeds: Sequence[int],
              cfg: EnsembleRecipe) -> TrainingDiverged:
    """The error for the first live member whose loss (E_live,) is not finite, naming the rates to lower."""
    j = int((~torch.isfinite(loss)).nonzero()[0])
    bad = int(live[j])
    rates = ", ".join(f"{(cfg.lr_keys or {}).get(group, group)} (now {lr})" for group, lr in cfg.lr.items())
    return TrainingDiverged(f"{desc}: training loss became {loss[j].item()} at step {step} "
                            f"(member {bad}, seed {seeds[bad]}): lower {rates}")


def train_ensemble(ensemble: Ensemble, data: Stacked, seeds: Sequence[int], cfg: EnsembleRecipe,
                   on_log: Callable[[int, Ensemble], None] | None = None, log_every: int = 0,
                   progress: bool = True, desc: str = "train", test: Stacked | None = None) -> Outcome:
    """Mini-batch SGD (or full-batch gradient descent) on the configured loss, each member on its own
    data with its own generator: per step, `choose_batch`, one `MemberStep` for the live members, and
    every `cfg.eval_every` steps a `Stopping` check. The members' class must be a `Member`.

    `on_log(step, ensemble)` is called at step 0, every `log_every` steps and at the end. With `test`
    (each member's test set), every check also records the first step with zero test error.
    Raises TrainingDiverged when a member's loss becomes non-finite.
    """
    generators = [torch.Generator().manual_seed(int(s)) for s in seeds]
    stopping, member_step = Stopping(ensemble, data, test, cfg), MemberStep(ensemble, cfg)
    if on_log:
        on_log(0, ensemble)
    stopping.check(0)
    last_step = logged_step = 0
    bar = tqdm(range(1, cfg.steps + 1), desc=desc, disable=not progress, mininterval=1.0)
    for step in bar:
        if not stopping.active.any():
            break  # every member has zero loss: nothing would change any more
        live = stopping.live()
        x, y, valid = choose_batch(data, live, cfg, generators)
        per_example = LOSSES[cfg.loss](ensemble(x, members=live), y)
        loss = per_example.where(valid, 0).sum(1) / valid.sum(1)  # (E_live,)
        finite = torch.isfinite(loss)
        if not finite.all() and not cfg.stop_diverged:
            raise _diverged(desc, loss, live, step, seeds, cfg)
        stopping.freeze_diverged(live, finite, step)  # reported in the outcome
        member_step(torch.autograd.grad(loss.where(finite, 0).sum(), member_step.params), stopping.active)
        last_step = step
        if step % cfg.eval_every == 0 or step == cfg.steps:
            stopping.check(step)
            bar.set_postfix(active=int(stopping.active.sum()), refresh=False)
        if on_log and step % log_every == 0:
            on_log(step, ensemble)
            logged_step = step
    if on_log and logged_step != last_step:
        on_log(last_step, ensemble)
    return stopping.outcome


def halved(cfg: EnsembleRecipe) -> EnsembleRecipe:
    """The recipe at half every rate and twice the steps: the same time horizon (rate x steps) of gradient flow."""
    return replace(cfg, steps=2 * cfg.steps, lr={group: rate / 2 for group, rate in cfg.lr.items()})


def train_stable(member: Callable[[int], nn.Module], data: Stacked, seeds: Sequence[int], cfg: EnsembleRecipe,
                 on_log: Callable[[int, Ensemble], None] | None = None, log_every: int = 0, progress: bool = True,
                 desc: str = "train", test: Stacked | None = None) -> tuple[Ensemble, Outcome]:
    """`train_ensemble` under the stability rule: the ensemble of `member(i)` (member i's model as it starts,
    the same at every call) trained by `cfg`; each member whose loss turned non-finite trains again from
    `member(i)` and its seed by `halved(cfg)`, then again by that halved, up to `cfg.max_halvings` times, and
    ends with the weights and outcome of its last training, its halvings counted. `on_log` sees the
    recipe's training only. Needs `cfg.stop_diverged`: a diverging member stops instead of the run."""
    if not cfg.stop_diverged:
        raise ValueError("train_stable needs EnsembleRecipe.stop_diverged: a diverged member must stop to be retrained")
    ensemble = Ensemble([member(i) for i in range(len(seeds))])
    outcome = train_ensemble(ensemble, data, seeds, cfg, on_log=on_log, log_every=log_every, progress=progress,
                             desc=desc, test=test)
    recipe = cfg
    for halving in range(1, cfg.max_halvings + 1):
        again = [i for i, unstable in enumerate(outcome.unstable) if unstable]
        if not again:
            break
        recipe = halved(recipe)
        retrained = Ensemble([member(i) for i in again])
        retry = train_ensemble(retrained, data.select(again), [seeds[i] for i in again], recipe, progress=progress,
                               desc=f"{desc}, rates / {2 ** halving}", test=test.select(again) if test else None)
        for j, i in enumerate(again):
            ensemble.put(i, retrained, j)
            for name in ("steps_run", "steps_to_zero_train_error", "steps_to_zero_test_error", "unstable"):
                getattr(outcome, name)[i] = getattr(retry, name)[j]
            outcome.halvings[i] = halving
    return ensemble, outcome


def chunk_plan(n_members: int, device: torch.device) -> tuple[int, int]:
    """(members per chunk, worker processes). Measured on a 2-core CPU: stacks of 8-16 small models
    stay in cache and run fastest, and single-thread workers, one per core, beat one process using
    both cores. On a GPU one stack of every member fills the device best."""
    if device.type == "cuda":
        return n_members, 1
    cores = torch.multiprocessing.cpu_count()
    chunk = min(16, max(1, math.ceil(n_members / cores)))
    return chunk, min(cores, math.ceil(n_members / chunk))
