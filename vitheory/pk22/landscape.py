"""[PK22] PK-10, Fig. 1: the loss landscape around a trained checkpoint, read on filter-normalised slices
(forward passes only).

A direction draws N(0, 1) for every entry of the model's state and rescales it as the official code
(how-do-vits-work, ops/loss_landscapes.py, `create_bases`) does: each entry to the norm of the weights
over dim 0 (`normalize_filter`: torch.norm(dim=0), so per input unit of a linear layer and per (input
channel, tap) of a convolution, not per output filter as Li et al. 2018 write it), zero for entries of
fewer than two dimensions (`ignore_bn`: biases, norms, BatchNorm statistics) and for the positional
encodings (the notebook's kws=["pos_embed", ...]; ours are named `P`). The loss at each point is the
training NLL on one fixed augmented batch of training images and the sum of the parameters' norms
(`ops/norm.py` `l2`: sum over parameters of ||p||, not squared), which the claim weighs by the weight
decay as the official notebook plots NLL + weight_decay * l2.

Slices per model and seed: one plane (directions 0 and 1, a square grid), `lines` 1-D lines (directions
0, 1, ...: the plane's axes first, at a finer step), and a permutation line: from the checkpoint to the
same network with the hidden units of its first residual branch reversed (the same function), where the
loss is equal at both ends and higher between, so it cannot be convex: the positive control of the
non-convexity count.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from vitheory.core.config import NON_NEGATIVE, POSITIVE, Section, Violation, at_least, knob
from vitheory.images.models import Block, ResidualBlock
from vitheory.images.recipe import augment

COLUMNS = {"model": str, "seed": int, "slice": str, "line": int, "alpha": float, "beta": float, "nll": float,
           "norms": float}
PLANE, LINE, PERMUTATION = "plane", "line", "permutation"  # the slices, as the table's `slice` column names them
MODELS = ("vit", "cnn", "alternet")  # train_real's ViT and CNN, pk_train's AlterNet (all the data)
POSITIONAL = "P"  # the last name component of every positional encoding (SmallViT.P, MapAttention.P)


@dataclass(frozen=True)
class LandscapeParams(Section):
    """params.yaml `pk_landscape`: the slices of PK-10."""

    n_images: int = knob(at_least(2))  # training images of the fixed augmented batch
    extent: float = knob(POSITIVE)  # each slice spans [-extent, extent] along each direction
    plane_points: int = knob(at_least(3))  # grid points per axis of the 2-D plane
    lines: int = knob(at_least(1))  # 1-D lines (directions 0, 1, ...: the plane's axes first)
    line_points: int = knob(at_least(3))  # points per line, and along the permutation line [0, 1]
    loss_rise: float = knob(POSITIVE)  # the matched loss: nats above each model's own centre
    tolerance: float = knob(NON_NEGATIVE)  # a second difference below -tolerance counts as negative (nats)
    seed: int = knob(NON_NEGATIVE)  # of the directions and of the batch's images and shifts

    def relations(self) -> Iterator[Violation]:
        for key in ("plane_points", "line_points"):
            if getattr(self, key) % 2 == 0:
                yield key, getattr(self, key), "odd: the checkpoint itself is the grid's centre point"


def _moved(name: str, weights: torch.Tensor) -> bool:
    """Whether the official directions move this state entry: two dimensions or more, not a positional
    encoding."""
    return weights.dim() >= 2 and weights.is_floating_point() and name.rsplit(".", 1)[-1] != POSITIONAL


def filter_normalised(state: dict[str, torch.Tensor], generator: torch.Generator) -> dict[str, torch.Tensor]:
    """One random direction over `state` (official `create_bases` for one basis): N(0, 1) per entry, rescaled
    to the weights' norm over dim 0 (the official 1e-7 in the denominator), zero where `_moved` says no.
    Every entry draws, moved or not, in state order: the draws do not depend on which entries move."""
    direction = {}
    for name, weights in state.items():
        draw = torch.randn(weights.shape, generator=generator, dtype=torch.float32)
        if _moved(name, weights):
            draw = weights.norm(dim=0, keepdim=True) / (draw.norm(dim=0, keepdim=True) + 1e-7) * draw
            direction[name] = draw.to(weights.dtype)
        else:
            direction[name] = torch.zeros_like(weights)
    return direction


def reversed_units(model: nn.Module) -> dict[str, torch.Tensor]:
    """The state of the same function with the hidden units of the first residual branch reversed: a ViT
    block's MLP units (rows of its first linear layer, columns of its second) or a residual block's inner
    channels (conv1's outputs, bn1's entries, conv2's inputs)."""
    state = {name: value.clone() for name, value in model.state_dict().items()}
    for prefix, module in model.named_modules():
        if isinstance(module, Block):
            rows = [f"{prefix}.mlp.0.weight", f"{prefix}.mlp.0.bias"]
            columns = [f"{prefix}.mlp.2.weight"]
            break
        if isinstance(module, ResidualBlock):
            rows = [f"{prefix}.conv1.weight"] + [f"{prefix}.bn1.{s}" for s in ("weight", "bias", "running_mean",
                                                                              "running_var")]
            columns = [f"{prefix}.conv2.weight"]
            break
    else:
        raise ValueError(f"{type(model).__name__} has no transformer or residual block whose units to reverse")
    for name in rows:
        state[name] = state[name].flip(0)
    for name in columns:
        state[name] = state[name].flip(1)
    return state


def fixed_batch(x: torch.Tensor, y: torch.Tensor, n_images: int, shift: int, hflip: bool, seed: int
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """`n_images` training images drawn without replacement and augmented once, as the models trained
    (random shifts, flips if the recipe flips), the same draws at every point, model and seed: the
    landscape is then a deterministic function, which a second difference needs (the official notebook
    draws a new augmentation at every point, over the whole training set)."""
    generator = torch.Generator().manual_seed(seed)
    index = torch.randperm(len(y), generator=generator)[:n_images].to(y.device)
    return augment(x[index], shift, hflip, generator), y[index]


@torch.no_grad()
def point_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """(NLL on the batch, sum over parameters of ||p||) at the model's current weights, in eval mode."""
    model.eval()
    nll = F.cross_entropy(model(x), y).item()
    return nll, float(sum(p.norm() for p in model.parameters()))


def _at(model: nn.Module, origin: dict[str, torch.Tensor], steps: list[tuple[float, dict[str, torch.Tensor]]]
        ) -> None:
    """Load origin + sum of t * direction (floating entries only; a counter stays as it is)."""
    model.load_state_dict({name: value + sum(t * d[name] for t, d in steps) if value.is_floating_point() else value
                           for name, value in origin.items()})


def grid(extent: float, points: int) -> list[float]:
    """`points` evenly spaced in [-extent, extent], the middle one exactly 0."""
    half = points // 2
    return [extent * i / half for i in range(-half, half + 1)]


def _directions(origin: dict[str, torch.Tensor], cfg: LandscapeParams, seed: int) -> list[dict[str, torch.Tensor]]:
    """The plane's and the lines' directions of one seed's model, drawn from `cfg.seed` and the seed."""
    generator = torch.Generator().manual_seed(cfg.seed * 1_000_003 + seed)
    return [filter_normalised(origin, generator) for _ in range(max(2, cfg.lines))]


def plane_points(name: str, seed: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor, cfg: LandscapeParams,
                 points: list[tuple[float, float]]) -> list[tuple]:
    """The plane's rows of `COLUMNS` at `points` (alpha, beta) alone: verify's recomputation."""
    origin = {key: value.clone() for key, value in model.state_dict().items()}
    directions = _directions(origin, cfg, seed)
    rows = []
    try:
        for alpha, beta in points:
            _at(model, origin, [(alpha, directions[0]), (beta, directions[1])])
            rows.append((name, seed, PLANE, 0, alpha, beta, *point_loss(model, x, y)))
    finally:
        model.load_state_dict(origin)
    return rows


def landscape_rows(name: str, seed: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                   cfg: LandscapeParams) -> list[tuple]:
    """Every slice of one model and seed, as rows of `COLUMNS` (`line`: the line's direction, 0 on the
    plane and the permutation line; `beta` 0 off the plane). The model's weights are restored after."""
    origin = {key: value.clone() for key, value in model.state_dict().items()}
    directions = _directions(origin, cfg, seed)
    plane = [(alpha, beta) for alpha in grid(cfg.extent, cfg.plane_points) for beta in grid(cfg.extent, cfg.plane_points)]
    rows = plane_points(name, seed, model, x, y, cfg, plane)
    try:
        for line in range(cfg.lines):
            for t in grid(cfg.extent, cfg.line_points):
                _at(model, origin, [(t, directions[line])])
                rows.append((name, seed, LINE, line, t, 0.0, *point_loss(model, x, y)))
        model.load_state_dict(origin)
        swapped = reversed_units(model)
        towards = {key: swapped[key] - origin[key] for key in origin if origin[key].is_floating_point()}
        for i in range(cfg.line_points):
            t = i / (cfg.line_points - 1)
            _at(model, origin, [(t, towards)])
            rows.append((name, seed, PERMUTATION, 0, t, 0.0, *point_loss(model, x, y)))
    finally:
        model.load_state_dict(origin)
    return rows
