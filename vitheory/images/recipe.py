"""The image trainer's (vitheory.images.batched) parts that others read too: a training task and its
result, the learning-rate schedule, the augmentation's draws and their application, the pixel
permutation (the Hessian and loss-landscape measures of [PK22] augment and permute as it trains)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from vitheory.images.params import RecipeParams


@dataclass(frozen=True)
class FitTask:
    """One model's training, self-contained so that a worker process can run it: `build` a picklable
    constructor (a functools.partial of a module-level builder), the training images on the CPU, and
    the held-out splits evaluated after every epoch and logged as `<log_prefix><split>/<metric>`."""

    build: Callable[[], nn.Module]
    cfg: RecipeParams
    x: torch.Tensor
    y: torch.Tensor
    epochs: int
    seed: int
    held_out: dict[str, tuple[torch.Tensor, torch.Tensor]]
    permutation: torch.Tensor | None = None
    state: tuple[Path, str] | None = None  # resume folder and run name: a killed run continues
    log_prefix: str = ""
    desc: str = "train"


@dataclass(frozen=True)
class FitResult:
    weights: dict[str, torch.Tensor]
    log: list[dict[str, float]]  # per epoch ({} between evaluations), those a resumed run had logged included
    final: dict[str, dict[str, float]]  # held-out split -> loss and accuracy after training


def warmup_cosine(warmup: int, total: int) -> Callable[[int], float]:
    """The learning-rate factor at each step: linear warmup, then cosine decay to 0 over the rest."""
    def rate(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / (total - warmup)))

    return rate


def permute_pixels(x: torch.Tensor, permutation: torch.Tensor | None) -> torch.Tensor:
    """Move pixel permutation[i] to position i, every channel alike; x (B, C, H, W)."""
    if permutation is None:
        return x
    b, c, h, w = x.shape
    return x.flatten(2)[..., permutation.to(x.device)].reshape(b, c, h, w)


def draw_augmentation(b: int, shift: int, hflip: bool, generator: torch.Generator
                      ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """A batch of `b` images' draws, in this order: shifts (B, 2) (dy, dx) in [0, 2 shift] and flips (B,);
    None where the recipe draws none."""
    shifts = (torch.stack([torch.randint(0, 2 * shift + 1, (b,), generator=generator) for _ in range(2)], 1)
              if shift else None)
    flips = torch.rand(b, generator=generator) < 0.5 if hflip else None
    return shifts, flips


def apply_augmentation(x: torch.Tensor, pad: int, shifts: torch.Tensor | None, flips: torch.Tensor | None
                       ) -> torch.Tensor:
    """x (B, C, H, W) zero-padded by `pad`, cut at its draws' shifts, then flipped where drawn."""
    b, _, h, w = x.shape
    if shifts is not None:
        shifts = shifts.to(x.device)
        padded = F.pad(x, (pad,) * 4)
        rows = shifts[:, :1] + torch.arange(h, device=x.device)[None]  # (B, H)
        cols = shifts[:, 1:] + torch.arange(w, device=x.device)[None]
        batch = torch.arange(b, device=x.device)[:, None, None]
        x = padded.permute(0, 2, 3, 1)[batch, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2)
    if flips is not None:
        x = torch.where(flips.to(x.device)[:, None, None, None], x.flip(-1), x)
    return x


def augment(x: torch.Tensor, shift: int, hflip: bool, generator: torch.Generator) -> torch.Tensor:
    """Random translation by up to `shift` pixels (zero padding) and, optionally, horizontal flips."""
    return apply_augmentation(x, shift, *draw_augmentation(len(x), shift, hflip, generator))
