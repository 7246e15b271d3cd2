"""[JSL22] experiments: positional attention trained by gradient descent over seeds (JSL-1, JSL-2),
the vanilla ViT on the negative control (JSL-3), and transfer to a new feature (JSL-4).

Every training is full-batch gradient descent on the logistic loss, the seeds of one setting
trained together as one ensemble (vitheory.ensemble), each seed from its own initialisation. Every ViT
trains under the stability rule (vitheory.core.ensemble.train_stable, `train.stability`): a seed whose
loss turns non-finite trains again at half the rates and twice the steps; one that diverges at every rate
tried is unstable, and the claims leave it out of their units. The linear model's loss is convex and
trains at its own rate: it raises rather than diverge unnoticed.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import nn
from tqdm import tqdm

from vitheory.core.artifacts import read_split
from vitheory.core.checkpoint import seed_folder
from vitheory.core.device import seeded
from vitheory.core.ensemble import (
    Ensemble,
    EnsembleRecipe,
    Stability,
    Stacked,
    loss_and_error,
    train_ensemble,
    train_stable,
)
from vitheory.core.history import History, log_step
from vitheory.core.metrics import sign_error_rate
from vitheory.jsl22.data import SPLIT_TENSORS, association, orthogonal_feature, sample
from vitheory.jsl22.models import MultiHeadViT, PatchGLM, PositionalViT
from vitheory.jsl22.params import (
    ControlParams,
    GLMParams,
    MultiHeadViTParams,
    PositionalViTParams,
    SpatialDataParams,
    SpatialTrainParams,
    TransferParams,
)

TRANSFER_COLUMNS = {"method": str, "n_train": int, "seed": int, "test_error": float, "unstable": int,
                    "halvings": int}
LogFn = Callable[[int, list[dict[str, float]]], None]


VARIANT_FOLDER = Path("variant")  # inside train_spatial's models folder: the ViTs of the variant partition


def read_spatial(folder: Path) -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor],
                                        dict[str, torch.Tensor]]:
    """A folder of generate_spatial's data: (train (X, y), test (X, y), structure: sets and w*)."""
    split = {name: read_split(folder, name, SPLIT_TENSORS) for name in ("train", "test")}
    train, test = ((split[s]["X"], split[s]["y"]) for s in ("train", "test"))
    return train, test, read_split(folder, "structure", ("sets", "w_star"))


def member_folder(model: str, seed: int) -> Path:
    """Where train_spatial keeps one seed's checkpoint of `model` (vit, glm), inside its models folder."""
    return Path(model) / seed_folder(seed)


def patch_builder(spec: PositionalViTParams | MultiHeadViTParams | GLMParams, n_patches: int,
                  dim: int) -> Callable[[], nn.Module]:
    """A constructor of the model that a params section describes, for D patches in R^d."""
    if isinstance(spec, PositionalViTParams):
        return lambda: PositionalViT(n_patches=n_patches, dim=dim, pos_dim=spec.pos_dim, score_form=spec.score_form,
                                     pos_init_std=spec.pos_init_std, readout_init_std=spec.readout_init_std)
    if isinstance(spec, MultiHeadViTParams):
        return lambda: MultiHeadViT(n_patches=n_patches, dim=dim, width=spec.width, heads=spec.heads,
                                    scores=spec.scores, pos_init_std=spec.pos_init_std,
                                    readout_init_std=spec.readout_init_std)
    return lambda: PatchGLM(n_patches=n_patches, dim=dim, init_std=spec.init_std)


@dataclass(frozen=True)
class Trained:
    """The members of an ensemble as separate models, before and after training, each one's metrics
    before and after, its halvings of the rates under the stability rule and whether it stayed unstable
    (its loss non-finite at every rate tried; it stays where it stopped)."""

    initial: list[nn.Module]
    models: list[nn.Module]
    initial_metrics: list[dict[str, float]]
    metrics: list[dict[str, float]]
    unstable: list[bool]
    halvings: list[int]


def stack(X: torch.Tensor, y: torch.Tensor, members: int, device: torch.device) -> Stacked:
    """The same training set for every member."""
    return Stacked(X[None].expand(members, *X.shape).to(device), y.float()[None].expand(members, -1).to(device),
                   torch.full((members,), len(X), device=device))


@torch.no_grad()
def test_metrics(ensemble: Ensemble, X: torch.Tensor, y: torch.Tensor) -> list[dict[str, float]]:
    """Logistic loss and 0-1 error of each member on one test set."""
    members = len(ensemble)
    loss, error = loss_and_error(ensemble, X[None].expand(members, *X.shape), y.float()[None].expand(members, -1),
                                 loss="logistic")
    return [{"loss": loss[i].item(), "error_rate": error[i].item()} for i in range(members)]


@torch.no_grad()
def attention_association(ensemble: Ensemble, probe: torch.Tensor, sets: torch.Tensor) -> list[dict[str, float]]:
    """Patch association of each member's positional encodings (P P^T) and of its attention map on
    `probe` (one example; positional attention is the same for every input)."""
    members = len(ensemble)
    _, attn = ensemble(probe[None, None].expand(members, 1, *probe.shape), return_attention=True)
    scores = []
    for i in range(members):
        P = ensemble.params["P"][i] if "P" in ensemble.params else ensemble.buffers["P"][i]
        pos = association(P @ P.T, sets)
        att = association(attn[i].reshape(-1, *attn.shape[-2:])[0], sets)
        scores.append({"pos_exact": pos["exact"], "pos_overlap": pos["overlap"],
                       "attn_exact": att["exact"], "attn_overlap": att["overlap"]})
    return scores


def train_patch_models(build: Callable[[], nn.Module], seeds: Sequence[int], train: tuple[torch.Tensor, torch.Tensor],
                       test: tuple[torch.Tensor, torch.Tensor], sgd: EnsembleRecipe, device: torch.device, *,
                       sets: torch.Tensor | None = None, on_log: LogFn | None = None, log_every: int = 0,
                       progress: bool = True, desc: str = "train") -> Trained:
    """Train one model per seed on the same data, under the stability rule when `sgd` stops a diverged member
    (`train_stable`). With `sets`, each log and the final metrics carry the patch association against them.
    `on_log(step, per-member metrics)`, of the recipe's training."""
    seeds = list(seeds)

    def member(i: int) -> nn.Module:
        return seeded(seeds[i], build).to(device)

    X_test, y_test = test[0].to(device), test[1].to(device)

    def measure(trained: Ensemble) -> list[dict[str, float]]:
        metrics = test_metrics(trained, X_test, y_test)
        if sets is not None:
            metrics = [m | a for m, a in zip(metrics, attention_association(trained, X_test[0], sets))]
        return metrics

    def members(ensemble: Ensemble) -> list[nn.Module]:
        return [ensemble.member(i, build()).cpu() for i in range(len(seeds))]

    start = Ensemble([member(i) for i in range(len(seeds))])
    log = (lambda step, trained: on_log(step, measure(trained))) if on_log else None
    data = stack(*train, len(seeds), device)
    if sgd.stop_diverged:
        ensemble, outcome = train_stable(member, data, seeds, sgd, on_log=log, log_every=log_every,
                                         progress=progress, desc=desc)
    else:
        ensemble = Ensemble([member(i) for i in range(len(seeds))])
        outcome = train_ensemble(ensemble, data, seeds, sgd, on_log=log, log_every=log_every, progress=progress,
                                 desc=desc)
    return Trained(members(start), members(ensemble), measure(start), measure(ensemble), outcome.unstable,
                   outcome.halvings)


def full_batch(steps: int, lr: dict[str, float], log_every: int, lr_keys: dict[str, str],
               optimizer: str = "sgd") -> EnsembleRecipe:
    """Full-batch gradient descent (or Adam) on the logistic loss, run for all its steps."""
    return EnsembleRecipe(steps=steps, batch_size=None, lr=lr, eval_every=log_every, loss="logistic",
                     stop_at_zero_loss=False, lr_keys=lr_keys, optimizer=optimizer)


def stable(recipe: EnsembleRecipe, stability: Stability) -> EnsembleRecipe:
    """`recipe` under the stability rule: a diverged seed stops and trains again at half the rates (`train_stable`)."""
    return replace(recipe, stop_diverged=True, max_halvings=stability.max_halvings)


def positional_recipe(cfg: SpatialTrainParams, lr_mixing: float | None = None,
                      lr_mixing_key: str = "spatial.lr_mixing") -> EnsembleRecipe:
    return full_batch(cfg.steps, {"mixing": lr_mixing or cfg.lr_mixing, "readout": cfg.lr_readout}, cfg.log_every,
                      {"mixing": lr_mixing_key, "readout": "spatial.lr_readout"})


def glm_recipe(cfg: GLMParams, section: str) -> EnsembleRecipe:
    return full_batch(cfg.steps, {"readout": cfg.lr}, cfg.steps, {"readout": f"{section}.glm.lr"})


def train_positional(spec: PositionalViTParams, cfg: SpatialTrainParams, stability: Stability, train, test,
                     sets: torch.Tensor, device: torch.device, on_log: LogFn | None = None, progress: bool = True,
                     data_label: str = "") -> Trained:
    """The positional-attention ViT of score form `spec.score_form`, one per seed, under the stability rule;
    an ablation form trains at its own mixing rate. `data_label` names a second data setting in progress and
    errors. The rates are tuned at the default sizes, and other sizes of the atlas diverge some seeds
    (issue 55): such a seed trains again at half the rates, and one unstable at every rate is left out of
    the claims' units."""
    build = patch_builder(spec, train[0].shape[1], train[0].shape[2])
    sgd = positional_recipe(cfg)
    if spec.score_form != cfg.vit.score_form:
        index = cfg.ablation.index(spec.score_form)
        sgd = positional_recipe(cfg, cfg.ablation_lr_mixing[index], f"spatial.ablation_lr_mixing[{index}]")
    return train_patch_models(build, range(cfg.seeds), train, test, stable(sgd, stability), device,
                              sets=sets, on_log=on_log, log_every=cfg.log_every, progress=progress,
                              desc=f"positional ViT ({spec.score_form}{data_label})")


def train_spatial(cfg: SpatialTrainParams, stability: Stability, train, test, sets: torch.Tensor,
                  device: torch.device, live: Any) -> tuple[Trained, dict[str, Trained], Trained, list[History]]:
    """JSL-1, JSL-2: the positional-attention ViT over seeds, with every seed's test metrics and
    association in a History at each log step and their medians in DVCLive; each other score form as an
    ablation; and the linear model. Returns (ViT, ablation by form, linear model, histories)."""
    histories = [History(model=cfg.vit.score_form, seed=seed) for seed in range(cfg.seeds)]

    def on_log(step: int, per_seed: list[dict[str, float]]) -> None:
        for history, metrics in zip(histories, per_seed):
            history.add(step, {"test": metrics})
        log_step(live, step, {f"test/{name.removesuffix('_median')}": value
                              for name, value in summarize(per_seed).items() if name.endswith("_median")})

    vit = train_positional(cfg.vit, cfg, stability, train, test, sets, device, on_log=on_log)
    ablation = {form: train_positional(replace(cfg.vit, score_form=form), cfg, stability, train, test, sets, device)
                for form in cfg.ablation}
    glm = train_glm(cfg.glm, cfg.seeds, "spatial", train, test, device)
    return vit, ablation, glm, histories


def train_glm(cfg: GLMParams, seeds: int, section: str, train, test, device: torch.device,
              progress: bool = True) -> Trained:
    """Theorem 3.1's generalized linear model, one per seed."""
    build = patch_builder(cfg, train[0].shape[1], train[0].shape[2])
    return train_patch_models(build, range(seeds), train, test, glm_recipe(cfg, section), device,
                              progress=progress, desc="linear model")


def train_control(cfg: ControlParams, stability: Stability, train, test, sets: torch.Tensor, device: torch.device,
                  progress: bool = True) -> Trained:
    """The multi-head ViT on the negative control, one per seed, under the stability rule; association against
    the teacher's sets."""
    build = patch_builder(cfg.vit, train[0].shape[1], train[0].shape[2])
    sgd = full_batch(cfg.steps, {"mixing": cfg.lr_mixing, "readout": cfg.lr_readout}, cfg.steps,
                     {"mixing": "control.lr_mixing", "readout": "control.lr_readout"}, cfg.optimizer)
    return train_patch_models(build, range(cfg.seeds), train, test, stable(sgd, stability), device, sets=sets,
                              progress=progress, desc=f"{cfg.vit.heads}-head ViT (control)")


@torch.no_grad()
def training_errors(models: Sequence[nn.Module], X: torch.Tensor, y: torch.Tensor) -> list[float]:
    """The 0-1 error of each model on its training set."""
    return [sign_error_rate(model(X), y.float()) for model in models]


def best_linear_error(X: torch.Tensor, y: torch.Tensor, feature: torch.Tensor) -> float:
    """Error of sign(sum_j <w*, X_j>), the linear model that knows w* (the noise is orthogonal to it)."""
    return sign_error_rate((X @ feature).sum(dim=1), y.float())


def downstream_data(cfg: TransferParams, data: SpatialDataParams, structure: dict[str, torch.Tensor]
                    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    """JSL-4's downstream task: the same sets, a new feature w' orthogonal to w*; a pool of training
    examples (the largest n) and a test set. Returns (w', pool, test)."""
    generator = torch.Generator().manual_seed(cfg.seed)
    feature = orthogonal_feature(structure["w_star"], generator)
    pool = sample(max(cfg.n_train), data, structure["sets"], feature, generator)
    test = sample(cfg.n_test, data, structure["sets"], feature, generator)
    return feature, (pool.X, pool.y), (test.X, test.y)


TransferRun = tuple[str, int, int, float, int, int]  # TRANSFER_COLUMNS' row


def transfer_runs(pretrained: Sequence[nn.Module], pretraining_unstable: Sequence[bool],
                  spec: PositionalViTParams, recipe: SpatialTrainParams, cfg: TransferParams, stability: Stability,
                  pool: tuple[torch.Tensor, torch.Tensor], test: tuple[torch.Tensor, torch.Tensor],
                  device: torch.device, progress: bool = True) -> list[TransferRun]:
    """(method, n, seed, test error, unstable, halvings) for every downstream size n and seed: `finetune` keeps
    the pre-trained positional attention of seed s frozen and learns a fresh readout; `scratch` trains the
    whole model of seed s from a fresh initialisation. Seed s trains on the first n examples of its own
    permutation of the pool. Both arms follow the stability rule (`train_stable`): a run unstable at every
    rate tried is kept, with a NaN error and unstable = 1, and left out of the claim's medians; so is every
    fine-tuning of a seed whose pre-training was unstable (`pretraining_unstable`): it has no learned
    attention to transfer."""
    n_patches, dim = pool[0].shape[1:]
    seeds = list(range(len(pretrained)))
    build = patch_builder(spec, n_patches, dim)
    finetune_sgd = full_batch(cfg.finetune_steps, {"mixing": 0.0, "readout": cfg.finetune_lr}, cfg.finetune_steps,
                              {"readout": "transfer.finetune_lr"})
    orders = [torch.randperm(len(pool[0]), generator=torch.Generator().manual_seed(cfg.seed + s)) for s in seeds]
    X_test, y_test = test[0].to(device), test[1].to(device)

    def finetuned(seed: int) -> nn.Module:
        model = seeded(cfg.seed + seed, build)  # a fresh readout v
        attention = {k: t for k, t in pretrained[seed].state_dict().items() if k != "v"}
        model.load_state_dict(attention | {"v": model.v.detach()})
        return model.to(device)

    def scratch(seed: int) -> nn.Module:
        return seeded(cfg.seed + seed, build).to(device)

    runs = []
    for n in tqdm(cfg.n_train, desc="transfer", disable=not progress):
        subsets = [(pool[0][order[:n]], pool[1][order[:n]].float()) for order in orders]
        data = Stacked.pad(subsets).to(device)
        for method, member, sgd in (("finetune", finetuned, finetune_sgd),
                                    ("scratch", scratch, positional_recipe(recipe))):
            ensemble, outcome = train_stable(member, data, [cfg.seed + s for s in seeds], stable(sgd, stability),
                                             progress=False)
            for seed, metrics in zip(seeds, test_metrics(ensemble, X_test, y_test)):
                unstable = outcome.unstable[seed] or (method == "finetune" and pretraining_unstable[seed])
                runs.append((method, n, seed, math.nan if unstable else metrics["error_rate"], int(unstable),
                             outcome.halvings[seed]))
    return runs


def samples_needed(runs: Sequence[TransferRun], method: str, target: float) -> int:
    """Smallest n from which on the median test error over the stable seeds stays <= target (an unstable run is
    left out, neither learned nor not; a size with none stable measured nothing, and ends the count there);
    -1: never in the grid."""
    by_n: dict[int, list[float]] = {}
    for run_method, n, _, error, unstable, _ in runs:
        if run_method == method:
            by_n.setdefault(n, [])
            if not unstable:
                by_n[n].append(error)
    needed = -1
    for n in sorted(by_n, reverse=True):
        if not by_n[n] or statistics.median(by_n[n]) > target:
            break
        needed = n
    return needed


def summarize(values: Sequence[dict[str, float]]) -> dict[str, float]:
    """Median, minimum and maximum over seeds of each metric."""
    out = {}
    for key in values[0]:
        column = [v[key] for v in values]
        out |= {f"{key}_median": statistics.median(column), f"{key}_min": min(column), f"{key}_max": max(column)}
    return out
