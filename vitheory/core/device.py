"""Where training runs and how it is seeded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch

from vitheory.core.errors import ParamsError

DEVICE = Literal["auto", "cpu", "cuda"]  # the type of params.yaml's train.device, which every training stage reads


def resolve_device(name: str) -> torch.device:
    """`auto` picks CUDA when present; `cuda` without a GPU is an error, not a silent fallback."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ParamsError("train.device = 'cuda' but no CUDA device is available: use 'auto' or 'cpu'")
    return torch.device(name)


def seeded(seed: int, build: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    """A model initialised from its own seed, whatever the global generator's state."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


def orthonormal_rows(n: int, dim: int, generator: torch.Generator) -> torch.Tensor:
    """(n, dim) rows of a random orthogonal matrix: orthonormal, in random directions."""
    q, r = torch.linalg.qr(torch.randn(dim, dim, generator=generator, dtype=torch.float64))
    q = q * torch.sign(torch.diagonal(r))  # QR is unique only up to column signs
    return q.T[:n].float()
