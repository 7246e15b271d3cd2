"""[LI23] LI-5 on real images: keep k of a trained ViT's patch tokens, chosen by its own attention
(or, as controls, at random or the least attended), at inference and after a short fine-tune; and a
spurious patch correlated with the class in training, removed or decorrelated at test time.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import replace

import torch

from vitheory.core.device import seeded
from vitheory.images.models import SmallViT
from vitheory.images.params import RecipeParams
from vitheory.images.training import evaluate, fit
from vitheory.li23.params import SparsifyRealParams

COLUMNS = {"experiment": str, "strategy": str, "kept_tokens": int, "seed": int, "finetuned": int,
           "test_accuracy": float}
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


def finetune_sparsified(model: SmallViT, x: torch.Tensor, y: torch.Tensor, cfg: RecipeParams, *, k: int,
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
    for i, position in enumerate(positions[marker_class.cpu()].tolist()):  # marker_class may live on the GPU
        row, col = divmod(position, per_row)
        x[i, :, row * patch:(row + 1) * patch, col * patch:(col + 1) * patch] = value
    return x


def marker_classes(y: torch.Tensor, correlation: float, n_classes: int, generator: torch.Generator) -> torch.Tensor:
    """Each image's marker class: its own with probability `correlation`, else uniformly random."""
    random_class = torch.randint(0, n_classes, y.shape, generator=generator)
    own = torch.rand(y.shape, generator=generator) < correlation
    return torch.where(own, y.cpu(), random_class).to(y.device)


def without_token(n_images: int, patches: int, dropped: torch.Tensor) -> torch.Tensor:
    """(N, patches - 1) sorted patch indices keeping every patch of each image but `dropped[i]`."""
    everything = torch.arange(patches, device=dropped.device).expand(n_images, -1)
    return everything[everything != dropped[:, None]].reshape(n_images, patches - 1)


def spurious_data(x: dict[str, torch.Tensor], y: dict[str, torch.Tensor], *, patches: int, patch: int,
                  correlation: float, marker_value: float, marker_seed: int, n_classes: int
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The training images, whose marker follows the class with probability `correlation`; the test images
    with their own class's marker (correlated) and with a random class's marker (decorrelated); and each
    decorrelated test image's marker patch. The markers follow `marker_seed` alone."""
    positions = marker_positions(patches, n_classes, marker_seed)
    generator = torch.Generator().manual_seed(marker_seed)
    train = add_marker(x["train"], marker_classes(y["train"], correlation, n_classes, generator), positions, patch,
                       marker_value)
    test_markers = marker_classes(y["test"], 0.0, n_classes, generator)
    decorrelated = add_marker(x["test"], test_markers, positions, patch, marker_value)
    correlated = add_marker(x["test"], y["test"], positions, patch, marker_value)
    return train, correlated, decorrelated, positions.to(test_markers.device)[test_markers]


def spurious_runs(build: Callable[[], SmallViT], x: dict[str, torch.Tensor], y: dict[str, torch.Tensor],
                  cfg: RecipeParams, *, seeds: int, epochs: int, correlation: float, marker_value: float,
                  marker_seed: int, n_classes: int) -> list[tuple[str, str, int, int, int, float]]:
    """Train on images whose marker patch follows the class with probability `correlation` (a spurious
    feature), then test on images that carry a random class's marker (decorrelated): with all tokens,
    with the marker's token removed (an oracle that knows where it is), and with the single most
    attended token removed (what attention finds); on images that carry their own class's marker (the
    shortcut's gain: what decorrelating costs); and on clean test images (no marker) for reference.
    Rows: (experiment, strategy, kept, seed, finetuned, accuracy)."""
    shape = build()  # only its patch grid is read
    patches = shape.n_patches
    train, correlated, decorrelated, marker_patch = spurious_data(x, y, patches=patches, patch=shape.patch, correlation=correlation,
                                                      marker_value=marker_value, marker_seed=marker_seed,
                                                      n_classes=n_classes)
    oracle = without_token(len(decorrelated), patches, marker_patch)
    rows = []
    for seed in range(seeds):
        model = seeded(seed, build).to(x["train"].device)
        fit(model, train, y["train"], cfg, epochs=epochs, seed=seed, progress=False)
        most_attended = without_token(len(decorrelated), patches, token_scores(model, decorrelated).argmax(dim=1))
        rows += [("spurious_clean", "all", patches, seed, 0, evaluate(model, x["test"], y["test"])["accuracy"]),
                 ("spurious_correlated", "all", patches, seed, 0, evaluate(model, correlated, y["test"])["accuracy"]),
                 ("spurious_decorrelated", "all", patches, seed, 0, evaluate(model, decorrelated, y["test"])["accuracy"]),
                 ("spurious_decorrelated", "oracle", patches - 1, seed, 0,
                  evaluate(model, decorrelated, y["test"], keep=oracle)["accuracy"]),
                 ("spurious_decorrelated", "attention", patches - 1, seed, 0,
                  evaluate(model, decorrelated, y["test"], keep=most_attended)["accuracy"])]
    return rows


def natural_runs(models: Sequence[SmallViT], x: dict[str, torch.Tensor], y: dict[str, torch.Tensor],
                 real: RecipeParams, cfg: SparsifyRealParams) -> list[tuple[str, str, int, int, int, float]]:
    """Every trained ViT (seed s) with all its tokens, then keeping k of them by each strategy, at inference
    and after a short fine-tune, for every k of `cfg.keep_tokens` (LI-5 asks at which k, if any, keeping
    the most attended tokens keeps the accuracy).
    Rows: (experiment, strategy, kept, seed, finetuned, accuracy)."""
    patches = models[0].n_patches
    finetune_cfg = replace(real, lr=cfg.finetune_lr)
    rows = []
    for seed, model in enumerate(models):
        rows.append(("natural", "all", patches, seed, 0, evaluate(model, x["test"], y["test"])["accuracy"]))
        for k in sorted(set(cfg.keep_tokens), reverse=True):
            for strategy in STRATEGIES:
                rows.append(("natural", strategy, k, seed, 0,
                             sparsified_accuracy(model, model, x["test"], y["test"], k, strategy, seed)))
                tuned = finetune_sparsified(model, x["train"], y["train"], finetune_cfg, k=k, strategy=strategy,
                                            epochs=cfg.finetune_epochs, seed=seed)
                rows.append(("natural", strategy, k, seed, 1,
                             sparsified_accuracy(tuned, model, x["test"], y["test"], k, strategy, seed)))
    return rows
