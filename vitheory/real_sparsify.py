"""[LI23] LI-5 on real images: keep k of a trained ViT's patch tokens, chosen by its own attention
(or, as controls, at random or the least attended), at inference and after a short fine-tune; and a
spurious patch correlated with the class in training, removed or decorrelated at test time.
"""

from __future__ import annotations

import copy
import statistics
from collections.abc import Callable, Sequence

import torch

from vitheory.ensemble import seeded
from vitheory.params import RealTrainParams
from vitheory.real import evaluate, fit
from vitheory.vision import SmallViT

STRATEGIES = ("attention", "random", "lowest")


@torch.no_grad()
def token_scores(model: SmallViT, x: torch.Tensor, batch_size: int = 512) -> torch.Tensor:
    """(N, patches) attention each patch token receives, mean over heads and layers: from the class
    token with `cls` pooling, averaged over all queries with `gap` pooling. (On digits the last layer
    alone ranked worse than random keeping for one seed of three; the layer mean did not.)"""
    model.eval()
    scores = []
    for start in range(0, len(x), batch_size):
        _, extras = model(x[start:start + batch_size], return_features=True)
        attn = torch.stack(extras["attention"]).mean(dim=(0, 2))  # (B, T, T)
        if model.pool == "cls":
            scores.append(attn[:, 0, 1:])
        else:
            scores.append(attn.mean(dim=1))
    return torch.cat(scores)


def choose(scores: torch.Tensor, k: int, strategy: str, generator: torch.Generator) -> torch.Tensor:
    """(N, k) sorted patch indices each image keeps."""
    if strategy == "attention":
        keep = scores.topk(k, dim=1).indices
    elif strategy == "lowest":
        keep = (-scores).topk(k, dim=1).indices
    else:
        keep = torch.argsort(torch.rand(scores.shape, generator=generator), dim=1)[:, :k].to(scores.device)
    return keep.sort(dim=1).values


def sparsified_accuracy(model: SmallViT, scorer: SmallViT, x: torch.Tensor, y: torch.Tensor, k: int, strategy: str,
                        seed: int) -> float:
    """Test accuracy of `model` when every image keeps the k tokens `strategy` picks from `scorer`'s attention."""
    keep = choose(token_scores(scorer, x), k, strategy, torch.Generator().manual_seed(seed))
    return evaluate(model, x, y, keep=keep)["accuracy"]


def finetune_sparsified(model: SmallViT, x: torch.Tensor, y: torch.Tensor, cfg: RealTrainParams, *, k: int,
                        strategy: str, epochs: int, seed: int) -> SmallViT:
    """A copy of `model` trained further on k tokens per image, picked by `strategy` from the original
    model's attention on each (augmented) batch."""
    tuned = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(seed)

    def keep(batch: torch.Tensor) -> torch.Tensor:
        return choose(token_scores(model, batch), k, strategy, generator)

    fit(tuned, x, y, cfg, epochs=epochs, seed=seed, token_keep=keep, progress=False)
    return tuned


def marker_positions(n_patches: int, n_classes: int, seed: int) -> torch.Tensor:
    """The patch that carries each class's spurious marker: distinct patches in a seeded order."""
    if n_classes > n_patches:
        raise ValueError(f"{n_classes} classes need as many marker patches; the image has {n_patches}")
    return torch.randperm(n_patches, generator=torch.Generator().manual_seed(seed))[:n_classes]


def add_marker(x: torch.Tensor, marker_class: torch.Tensor, positions: torch.Tensor, patch: int,
               value: float) -> torch.Tensor:
    """Set the patch of each image's marker class (row-major patch index) to `value`; x (N, C, H, W)."""
    x = x.clone()
    per_row = x.shape[-1] // patch
    for i, position in enumerate(positions[marker_class].tolist()):
        row, col = divmod(position, per_row)
        x[i, :, row * patch:(row + 1) * patch, col * patch:(col + 1) * patch] = value
    return x


def marker_classes(y: torch.Tensor, correlation: float, n_classes: int, generator: torch.Generator) -> torch.Tensor:
    """Each image's marker class: its own with probability `correlation`, else uniformly random."""
    random_class = torch.randint(0, n_classes, y.shape, generator=generator)
    own = torch.rand(y.shape, generator=generator) < correlation
    return torch.where(own, y.cpu(), random_class).to(y.device)


def spurious_runs(build: Callable[[], SmallViT], x: dict[str, torch.Tensor], y: dict[str, torch.Tensor],
                  cfg: RealTrainParams, *, seeds: int, epochs: int, correlation: float, keep: int, marker_value: float,
                  marker_seed: int, n_classes: int) -> list[tuple[str, str, int, int, int, float]]:
    """Train on images whose marker patch follows the class with probability `correlation`; test on
    clean images (marker removed) and on images with a random class's marker (decorrelated), with all
    tokens and with the `keep` most attended. Rows: (experiment, strategy, kept, seed, finetuned, accuracy)."""
    shape = build()  # only its patch grid is read
    positions = marker_positions(shape.n_patches, n_classes, marker_seed)
    generator = torch.Generator().manual_seed(marker_seed)
    train = add_marker(x["train"], marker_classes(y["train"], correlation, n_classes, generator), positions,
                       shape.patch, marker_value)
    tests = {"spurious_removed": x["test"],
             "spurious_decorrelated": add_marker(x["test"], marker_classes(y["test"], 0.0, n_classes, generator),
                                                 positions, shape.patch, marker_value)}
    rows = []
    for seed in range(seeds):
        model = seeded(seed, build).to(x["train"].device)
        fit(model, train, y["train"], cfg, epochs=epochs, seed=seed, progress=False)
        for experiment, images in tests.items():
            rows.append((experiment, "all", model.n_patches, seed, 0, evaluate(model, images, y["test"])["accuracy"]))
            rows.append((experiment, "attention", keep, seed, 0,
                         sparsified_accuracy(model, model, images, y["test"], keep, "attention", seed)))
    return rows


def summarize(rows: Sequence[Sequence], patches: int, half: int) -> dict[str, float]:
    """sparsify_real's metrics from its runs (rows in the order of schemas.SPARSIFY_REAL_RUNS): mean test
    accuracy over seeds with all tokens and with half of them kept by each strategy, at inference and
    fine-tuned, and of the spurious-marker experiments."""
    def mean(experiment: str, strategy: str, kept: int, finetuned: int) -> float:
        return statistics.mean(r[-1] for r in rows if tuple(r[:3]) == (experiment, strategy, kept)
                               and r[4] == finetuned)

    summary = {"patches": patches, "half": half, "full_accuracy": mean("natural", "all", patches, 0)}
    for finetuned, label in ((0, "inference"), (1, "finetuned")):
        for strategy in STRATEGIES:
            summary[f"{label}_{strategy}_half_accuracy"] = mean("natural", strategy, half, finetuned)
    for experiment in ("spurious_removed", "spurious_decorrelated"):
        summary[f"{experiment}_all_accuracy"] = mean(experiment, "all", patches, 0)
        summary[f"{experiment}_attention_half_accuracy"] = mean(experiment, "attention", half, 0)
    return summary
