"""[PK22] PK-3, PK-4: what each block does to the feature maps, by the official method: the Fourier
spectrum's high-frequency log amplitude and the spatial variance, block by block.

Park, Kim. "How Do Vision Transformers Work?" ICLR 2022, arXiv 2202.06709.
"""

from __future__ import annotations

import math

import torch
from torch import nn

COLUMNS = {"model": str, "seed": int, "index": int, "kind": str, "depth": float, "tokens": int,
           "high_frequency": float, "variance": float}


def _grid(feature: torch.Tensor) -> torch.Tensor:
    """(B, N, C) tokens in row-major order -> (B, C, h, h)."""
    b, n, c = feature.shape
    side = math.isqrt(n)
    if side * side != n:
        raise ValueError(f"{n} tokens do not form a square grid")
    return feature.transpose(1, 2).reshape(b, c, side, side)


def high_frequency_delta(feature: torch.Tensor) -> float:
    """The official method (fourier_analysis.ipynb): log(|FFT2| + 1e-6) of each map, rolled by half a
    side so that frequency 0 sits in the middle, averaged over batch and channels; its half-diagonal
    `diag()[h // 2:]` from frequency 0 to (1 - 2/h) pi (the plots' "1.0 pi"), last value minus first."""
    log_amplitude = (torch.fft.fft2(_grid(feature).double()).abs() + 1e-6).log()
    h = log_amplitude.shape[-1]
    diagonal = torch.roll(log_amplitude, shifts=(h // 2, h // 2), dims=(-2, -1)).mean(dim=(0, 1)).diagonal()[h // 2:]
    return float(diagonal[-1] - diagonal[0])


def spatial_variance(feature: torch.Tensor) -> float:
    """Variance over spatial positions per sample and channel, averaged."""
    return float(feature.double().var(dim=1).mean())


@torch.no_grad()
def block_profile(model: nn.Module, x: torch.Tensor) -> list[dict[str, float | str]]:
    """Per feature map (the embedded input, then every block): kind, normalised depth, its number of
    tokens (positions), the high-frequency delta and the spatial variance, on the images x."""
    model.eval()
    _, extras = model(x, return_features=True)
    features = extras["features"]
    last = len(features) - 1
    return [{"index": i, "kind": kind, "depth": i / last, "tokens": f.shape[1],
             "high_frequency": high_frequency_delta(f), "variance": spatial_variance(f)}
            for i, (kind, f) in enumerate(features)]


def block_changes(profile: list[dict[str, float | str]], quantity: str) -> dict[str, list[float]]:
    """The change of `quantity` across every block (output minus input), by kind of block. A block that
    downsamples compares maps of two sizes and is left out (the official plots mark it apart)."""
    changes: dict[str, list[float]] = {}
    for before, after in zip(profile, profile[1:]):
        if after["tokens"] == before["tokens"]:
            changes.setdefault(str(after["kind"]), []).append(float(after[quantity]) - float(before[quantity]))
    return changes


def profile_rows(name: str, seed: int, model: nn.Module, x: torch.Tensor) -> list[tuple]:
    """`block_profile` of one model as rows of `COLUMNS`."""
    return [(name, seed, r["index"], r["kind"], r["depth"], r["tokens"], r["high_frequency"], r["variance"])
            for r in block_profile(model, x)]
