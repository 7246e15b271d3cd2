"""Training and evaluating the small image classifiers (vitheory.images.models) on real images.

AdamW with a linear warmup and a cosine learning-rate schedule, light augmentation (random shifts, optional horizontal
flips), cross-entropy. A fixed pixel permutation, when given, is applied after augmentation: the
model only ever sees permuted images ([JSL22] Figure 5).
"""

from __future__ import annotations

import inspect
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from vitheory.core.artifacts import read_meta
from vitheory.core.checkpoint import seed_folder
from vitheory.core.config import Section
from vitheory.core.device import seeded
from vitheory.core.errors import TrainingDiverged
from vitheory.core.history import log_step
from vitheory.core.metrics import class_mistakes
from vitheory.core.processes import worker_pool
from vitheory.core.resume import Resume, RunState
from vitheory.images.batched import train_batched
from vitheory.images.datasets import Images, load_prepared
from vitheory.images.models import ARCHITECTURES
from vitheory.images.params import RealTrainParams
from vitheory.images.recipe import FitResult, FitTask, augment, permute_pixels, warmup_cosine

EpochLog = Callable[[int], dict[str, float]]
# torch.compile's on-disk cache (a warm one turns a 30-56 s compile into seconds): beside the stage locks
# and resume state, git-ignored and outside every DVC output; relative to the repository root, where
# stages run. TORCHINDUCTOR_CACHE_DIR, when set, wins.
INDUCTOR_CACHE = Path(".vitheory/inductor")


@dataclass(frozen=True)
class Normalizer:
    """Per-channel mean and standard deviation of the training images (0..255 scale)."""

    mean: torch.Tensor
    std: torch.Tensor

    @staticmethod
    def fit(train: Images) -> Normalizer:
        pixels = train.X.double().flatten(0, 2)  # (N*H*W, C)
        return Normalizer(pixels.mean(0).float(), pixels.std(0).clamp_min(1e-3).float())

    def __call__(self, images: Images) -> torch.Tensor:
        """(N, C, H, W) float images."""
        return ((images.X.float() - self.mean) / self.std).permute(0, 3, 1, 2).contiguous()


@dataclass(frozen=True)
class LoadedImages:
    """Prepared splits, normalised by the training images' statistics, on a device."""

    x: dict[str, torch.Tensor]  # (N, C, H, W) float
    y: dict[str, torch.Tensor]
    normalize: Normalizer
    image_size: int
    channels: int
    n_classes: int


def load_images(folder: str | Path, split_names: tuple[str, ...], device: torch.device) -> LoadedImages:
    """The splits written by prepare_images (the training split is always read: it sets the normalisation)."""
    splits = {name: load_prepared(folder, name) for name in dict.fromkeys(("train", *split_names))}
    meta = read_meta(folder)
    normalize = Normalizer.fit(splits["train"])
    height, _, channels = meta["image_shape"]
    return LoadedImages({name: normalize(splits[name]).to(device) for name in split_names},
                        {name: splits[name].y.to(device) for name in split_names}, normalize, height, channels,
                        len(meta["classes"]))


def pixel_permutation(height: int, width: int, block: int, seed: int) -> torch.Tensor:
    """One fixed permutation of the H*W pixel positions (row-major) that moves whole block x block
    squares (block 1: single pixels): a ViT with patches of that size sees its tokens shuffled, intact."""
    rows, cols = height // block, width // block
    order = torch.randperm(rows * cols, generator=torch.Generator().manual_seed(seed))
    source_row, source_col = order // cols, order % cols  # the block that lands at each block position
    pixel = torch.arange(height * width).reshape(height, width)
    blocks = pixel.reshape(rows, block, cols, block).permute(0, 2, 1, 3)  # (rows, cols, block, block)
    moved = blocks[source_row, source_col].reshape(rows, cols, block, block)
    return moved.permute(0, 2, 1, 3).reshape(-1)


def patch_order(permutation: torch.Tensor, image_size: int, patch: int) -> torch.Tensor | None:
    """For a pixel permutation that moves whole patch x patch squares: the natural patch index shown
    at each patch position of a permuted image (row-major); None when it splits patches."""
    grid = image_size // patch
    pixels = permutation.reshape(grid, patch, grid, patch).permute(0, 2, 1, 3).reshape(grid * grid, patch * patch)
    rows, cols = pixels // image_size, pixels % image_size
    source = (rows // patch) * grid + cols // patch  # (patches, pixels per patch): each pixel's natural patch
    if not (source == source[:, :1]).all():
        return None
    return source[:, 0]


def build_model(preset: Section, image_size: int, channels: int, n_classes: int) -> nn.Module:
    """The model of ARCHITECTURES[type(preset)] for images of this shape, the preset's fields its keywords.
    A model that pools globally (the CNN) takes images of any size and no `image_size`: it is not told theirs."""
    model = ARCHITECTURES[type(preset)]
    size = {"image_size": image_size} if "image_size" in inspect.signature(model).parameters else {}
    return model(**size, channels=channels, n_classes=n_classes, **asdict(preset))


@torch.no_grad()
def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 512,
             **forward: torch.Tensor) -> dict[str, float]:
    """Cross-entropy and accuracy of `model` on normalised images x; `forward` keywords are sliced
    with the batch (e.g. keep=...)."""
    model.eval()
    loss, mistakes = 0.0, 0
    for start in range(0, len(y), batch_size):
        part = slice(start, start + batch_size)
        logits = model(x[part], **{k: v[part] for k, v in forward.items()})
        loss += F.cross_entropy(logits, y[part], reduction="sum").item()
        mistakes += class_mistakes(logits, y[part]).sum().item()
    return {"loss": loss / len(y), "accuracy": (len(y) - mistakes) / len(y)}


def compiles(model_class: type[nn.Module], cfg: RealTrainParams) -> bool:
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


def fit(model: nn.Module, x: torch.Tensor, y: torch.Tensor, cfg: RealTrainParams, *, epochs: int, seed: int,
        permutation: torch.Tensor | None = None, token_keep: Callable[[torch.Tensor], torch.Tensor] | None = None,
        on_epoch: EpochLog | None = None, state: RunState | None = None, progress: bool = True,
        desc: str = "train") -> None:
    """Train in place for `epochs` on normalised images x (already on the model's device).

    `token_keep(batch) -> (B, k)` trains with sparsified tokens (the model must accept `keep`).
    `on_epoch(epoch)` returns the metrics to log after each epoch. With a `state`, training starts
    from its last saved epoch and saves after each epoch, with those metrics: a resumed run ends with
    the same bytes as an uninterrupted one. Where `cfg.compile_by_kind` switches it on for the model's kind,
    the training step's forward and backward go through torch.compile. Raises TrainingDiverged when the loss becomes non-finite.
    """
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    steps_per_epoch = math.ceil(len(y) / cfg.batch_size)
    total = epochs * steps_per_epoch
    warmup = min(cfg.warmup_epochs * steps_per_epoch, total - 1)

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(warmup, total))
    done = state.restore(model, optimizer, schedule, generator) if state else 0
    forward = compiled(model) if compiles(type(model), cfg) else model  # shares model's parameters; evaluations stay eager
    for epoch in tqdm(range(done + 1, epochs + 1), desc=desc, disable=not progress, mininterval=1.0,
                      initial=done, total=epochs):
        model.train()
        order = torch.randperm(len(y), generator=generator).to(x.device)
        for start in range(0, len(y), cfg.batch_size):
            index = order[start:start + cfg.batch_size]
            batch = permute_pixels(augment(x[index], cfg.shift, cfg.hflip, generator), permutation)
            keep = {"keep": token_keep(batch)} if token_keep else {}
            loss = F.cross_entropy(forward(batch, **keep), y[index])
            if not torch.isfinite(loss):
                raise TrainingDiverged(f"training loss became {loss.item()} in epoch {epoch}: lower real.lr "
                                       f"(now {cfg.lr})")
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
        metrics = on_epoch(epoch) if on_epoch else {}
        if state:
            state.save(epoch, metrics, model, optimizer, schedule, generator)


def run_task(task: FitTask, device: str, progress: bool = True) -> FitResult:
    """Train one model from its seed on one intra-op thread: its bits do not depend on the machine's cores."""
    torch.set_num_threads(1)
    model = seeded(task.seed, task.build).to(device)
    held_out = {name: (permute_pixels(x.to(device), task.permutation), y.to(device))
                for name, (x, y) in task.held_out.items()}
    state = RunState(*task.state) if task.state else None
    log = list(state.log) if state else []
    if state and state.epoch:
        print(f"{task.desc}: resuming after epoch {state.epoch} of {task.epochs}", file=sys.stderr)

    last: dict[str, dict[str, float]] = {}  # held-out split -> metrics at the latest evaluation

    def evaluate_and_log(epoch: int) -> dict[str, float]:
        """The held-out metrics every `eval_every` epochs and after the last, else {}: one entry per epoch."""
        due = epoch % task.cfg.eval_every == 0 or epoch == task.epochs
        if due:
            last.update({name: evaluate(model, x, y) for name, (x, y) in held_out.items()})
        metrics = {f"{task.log_prefix}{name}/{metric}": value for name in held_out
                   for metric, value in last[name].items()} if due else {}
        log.append(metrics)
        return metrics

    fit(model, task.x.to(device), task.y.to(device), task.cfg, epochs=task.epochs, seed=task.seed,
        permutation=task.permutation, on_epoch=evaluate_and_log if held_out else None, state=state,
        progress=progress, desc=task.desc)
    # the last epoch's evaluation is the final one: evaluated again only for a run resumed after its last epoch
    final = last or {name: evaluate(model, x, y) for name, (x, y) in held_out.items()}
    return FitResult({k: v.cpu() for k, v in model.state_dict().items()}, log, final)


def task_compiles(task: FitTask) -> bool:
    """Whether `task.cfg.compile_by_kind` switches torch.compile on for the kind of model the task builds
    (built on the meta device: no memory, no draw from the random generators)."""
    with torch.device("meta"):
        return compiles(type(task.build()), task.cfg)


def run_tasks(tasks: Sequence[FitTask], device: torch.device, progress: bool = True) -> list[FitResult]:
    """Every task, in order of `tasks`. On a CPU, one single-thread worker process per core runs them
    side by side (measured here: faster than one process using both cores for models this small, see
    benchmarks/image_trainer.py); on a GPU each family of seeds trains as one batched model (vitheory.images.batched),
    but the tasks whose model kind `real.compile_by_kind` compiles, which train one after the other."""
    if device.type == "cuda":
        results: list[FitResult | None] = [None] * len(tasks)
        eager = [i for i, task in enumerate(tasks) if not task_compiles(task)]
        for i, result in zip(eager, train_batched([tasks[i] for i in eager], device, progress)):
            results[i] = result
        for i in sorted(set(range(len(tasks))) - set(eager)):
            results[i] = run_task(tasks[i], device.type, progress)
        return results
    workers = min(len(tasks), len(os.sched_getaffinity(0)))
    # the stage's overall bar, over its trainings (each training has its own, by epoch)
    overall = partial(tqdm, total=len(tasks), desc=f"{len(tasks)} trainings", disable=not progress, mininterval=1.0)
    if workers <= 1:
        return list(overall(run_task(task, device.type, progress) for task in tasks))
    with worker_pool(workers) as pool:
        return list(overall(pool.map(run_task, tasks, [device.type] * len(tasks), [progress] * len(tasks))))


def train_seeds(build: Callable[[], nn.Module], cfg: RealTrainParams, data: LoadedImages, *,
                permutation: torch.Tensor | None, resume: Resume, live: Any, device: torch.device, desc: str
                ) -> list[tuple[nn.Module, dict[str, float]]]:
    """One model per seed (`cfg.seeds`), each from its own seed, trained by `fit` on the training images
    (permuted when `permutation` is given, as are the held-out ones), the seeds side by side
    (`run_tasks`). The validation and test loss and accuracy, every `cfg.eval_every` epochs, go to DVCLive as
    `seed_<s>/<split>/<metric>`, seed by seed, and into `resume`, from which a killed run continues.
    Returns each model with its final validation and test metrics."""
    held_out = {name: (data.x[name].cpu(), data.y[name].cpu()) for name in ("val", "test")}
    tasks = [FitTask(build, cfg, data.x["train"].cpu(), data.y["train"].cpu(), cfg.epochs, seed, held_out,
                     permutation, (resume.folder, seed_folder(seed)), f"{seed_folder(seed)}/", f"{desc} seed {seed}")
             for seed in range(cfg.seeds)]
    trained = []
    for seed, result in enumerate(run_tasks(tasks, device)):
        for epoch, metrics in enumerate(result.log, start=1):
            if metrics:
                log_step(live, epoch, dict(sorted(metrics.items())))
        model = build()
        model.load_state_dict(result.weights)
        final = result.final
        trained.append((model.eval(), {"seed": seed, "val_accuracy": final["val"]["accuracy"],
                                       "test_accuracy": final["test"]["accuracy"], "test_loss": final["test"]["loss"]}))
    return trained
