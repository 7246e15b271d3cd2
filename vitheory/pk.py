"""[PK22] analyses of trained image models (SCIENCE.md section 3): Fourier spectra and spatial variance
of the feature maps block by block, robustness to band-passed noise, and the Hessian spectrum.

Park, Kim. "How Do Vision Transformers Work?" ICLR 2022, arXiv 2202.06709.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence

import numpy as np
import torch
from scipy.sparse.linalg import LinearOperator, eigsh
from torch import nn
from torch.func import functional_call, grad, jvp


def _grid(feature: torch.Tensor) -> torch.Tensor:
    """(B, N, C) tokens in row-major order -> (B, C, h, h)."""
    b, n, c = feature.shape
    side = math.isqrt(n)
    if side * side != n:
        raise ValueError(f"{n} tokens do not form a square grid")
    return feature.transpose(1, 2).reshape(b, c, side, side)


def high_frequency_delta(feature: torch.Tensor) -> float:
    """The official method: log(|FFT2| + 1e-6) of each map, centred, averaged over batch and channels;
    along the half-diagonal from the centre (frequency 0) to the corner (1.0 pi), the value at the
    corner minus the value at the centre."""
    spectrum = torch.fft.fftshift(torch.fft.fft2(_grid(feature).double()), dim=(-2, -1))
    log_amplitude = (spectrum.abs() + 1e-6).log().mean(dim=(0, 1))  # (h, h)
    # after fftshift, index h // 2 is frequency 0 and index 0 is -pi (the same as pi for even h)
    diagonal = log_amplitude.diagonal()[:log_amplitude.shape[0] // 2 + 1].flip(0)
    return float(diagonal[-1] - diagonal[0])


def spatial_variance(feature: torch.Tensor) -> float:
    """Variance over spatial positions per sample and channel, averaged."""
    return float(feature.double().var(dim=1).mean())


@torch.no_grad()
def block_profile(model: nn.Module, x: torch.Tensor) -> list[dict[str, float | str]]:
    """Per feature map (the embedded input, then every block): kind, normalised depth, the high-frequency
    delta and the spatial variance, on the images x."""
    model.eval()
    _, extras = model(x, return_features=True)
    features = extras["features"]
    last = len(features) - 1
    return [{"index": i, "kind": kind, "depth": i / last, "high_frequency": high_frequency_delta(f),
             "variance": spatial_variance(f)} for i, (kind, f) in enumerate(features)]


def change_by_kind(profile: list[dict[str, float | str]], quantity: str) -> dict[str, float]:
    """Mean change of `quantity` across the blocks of each kind (output minus input)."""
    changes: dict[str, list[float]] = {}
    for before, after in zip(profile, profile[1:]):
        changes.setdefault(str(after["kind"]), []).append(float(after[quantity]) - float(before[quantity]))
    return {kind: float(np.mean(values)) for kind, values in changes.items()}


def band_noise(shape: tuple[int, ...], frequency: float, bandwidth: float, rms: float,
               generator: torch.Generator) -> torch.Tensor:
    """Gaussian noise (B, C, H, W) keeping only frequencies whose radius max(|f_x|, |f_y|), in units of
    pi, lies within bandwidth / 2 of `frequency`, scaled to root-mean-square `rms` per image."""
    noise = torch.randn(shape, generator=generator, dtype=torch.float64)
    h, w = shape[-2:]
    fy = torch.fft.fftfreq(h, dtype=torch.float64).abs()[:, None] * 2  # 1.0 = pi
    fx = torch.fft.fftfreq(w, dtype=torch.float64).abs()[None, :] * 2
    radius = torch.maximum(fy, fx)
    mask = (radius - frequency).abs() <= bandwidth / 2 + 1e-9
    if not mask.any():
        raise ValueError(f"no frequency of a {h} x {w} image lies within {bandwidth / 2} of {frequency} pi")
    filtered = torch.fft.ifft2(torch.fft.fft2(noise) * mask).real
    scale = filtered.pow(2).mean(dim=(1, 2, 3), keepdim=True).sqrt().clamp_min(1e-12)
    return (filtered / scale * rms).float()


@torch.no_grad()
def noisy_accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, noise: torch.Tensor) -> float:
    model.eval()
    return float((model(x + noise).argmax(-1) == y).float().mean())


def hessian_operator(model: nn.Module, loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                     x: torch.Tensor, y: torch.Tensor) -> LinearOperator:
    """The Hessian of loss(model(x), y) with respect to the trainable parameters, as a scipy
    LinearOperator of Hessian-vector products (forward-over-reverse, torch.func). Buffers (BatchNorm
    statistics) are held fixed; the model is evaluated in eval mode. (The models here train with
    AdamW, whose weight decay is not a term of the loss: the loss is the cross-entropy alone.)"""
    model.eval()
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    params = {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}
    buffers = dict(model.named_buffers())
    shapes = [params[n].shape for n in names]
    sizes = [params[n].numel() for n in names]

    def loss(theta: dict[str, torch.Tensor]) -> torch.Tensor:
        return loss_fn(functional_call(model, (theta, buffers), (x,)), y)

    gradient = grad(loss)

    def matvec(vector: np.ndarray) -> np.ndarray:
        chunks = torch.from_numpy(np.asarray(vector, dtype=np.float64).reshape(-1)).split(sizes)
        tangent = {n: c.reshape(s).to(params[n]) for n, c, s in zip(names, chunks, shapes)}
        _, hvp = jvp(gradient, (params,), (tangent,))
        return torch.cat([hvp[n].reshape(-1) for n in names]).double().cpu().numpy()

    size = sum(sizes)
    return LinearOperator((size, size), matvec=matvec, dtype=np.float64)


def top_eigenvalues(operator: LinearOperator, k: int, seed: int, tol: float = 1e-6) -> np.ndarray:
    """The k eigenvalues of largest magnitude (Lanczos, scipy's eigsh), ascending."""
    start = np.random.default_rng(seed).standard_normal(operator.shape[0])
    return np.sort(eigsh(operator, k=k, which="LM", v0=start, tol=tol, return_eigenvectors=False))


def summarize(profiles: Sequence[Sequence], noise_rows: Sequence[Sequence], hessian_rows: Sequence[Sequence]) -> dict:
    """pk_analysis's metrics from its tables (rows in the order of schemas.PK_PROFILES, PK_NOISE,
    PK_HESSIAN). Mean change of the high-frequency delta and of the variance across the blocks of each kind (over
    seeds; ViT, CNN, AlterNet), the accuracy drop at the lowest and highest noise band (ViT, CNN), and
    NEP and APE (ViT, CNN, ViT with global average pooling, ViT on the smallest data fraction)."""
    summary = {}
    for name in ("vit", "cnn", "alternet"):
        changes = {"high_frequency": {}, "variance": {}}
        for seed in sorted({row[1] for row in profiles if row[0] == name}):
            profile = [{"kind": r[3], "high_frequency": r[5], "variance": r[6]}
                       for r in profiles if r[0] == name and r[1] == seed]
            for quantity, by_kind in changes.items():
                for kind, change in change_by_kind(profile, quantity).items():
                    by_kind.setdefault(kind, []).append(change)
        for quantity, by_kind in changes.items():
            for kind, values in by_kind.items():
                summary[f"{name}_{quantity}_change_{kind}"] = float(np.mean(values))
    for name in ("vit", "cnn"):
        drops = {}
        for _, _, frequency, drop in (r for r in noise_rows if r[0] == name):
            drops.setdefault(frequency, []).append(drop)
        summary[f"{name}_noise_drop_lowest"] = float(np.mean(drops[min(drops)]))
        summary[f"{name}_noise_drop_highest"] = float(np.mean(drops[max(drops)]))
    for name in ("vit", "cnn", "vit_gap", "vit_small"):
        eigenvalues = np.array([r[4] for r in hessian_rows if r[0] == name])
        summary[f"{name}_nep"] = float((eigenvalues < 0).mean())
        summary[f"{name}_ape"] = float(eigenvalues[eigenvalues > 0].mean()) if (eigenvalues > 0).any() else 0.0
    return summary



def training_summary(runs: Sequence[Sequence]) -> dict[str, float]:
    """pk_train's metrics from its runs (rows in the order of schemas.PK_TRAIN_RUNS): mean training and
    test error and loss over seeds of each model and data fraction, keyed `<model>_<fraction>_<quantity>`."""
    summary = {}
    for name, fraction in sorted({(r[0], r[1]) for r in runs}):
        rows = [r for r in runs if (r[0], r[1]) == (name, fraction)]
        key = f"{name}_{fraction:g}"
        summary |= {f"{key}_train_error": statistics.mean(r[4] for r in rows),
                    f"{key}_test_error": statistics.mean(r[6] for r in rows),
                    f"{key}_train_loss": statistics.mean(r[3] for r in rows),
                    f"{key}_test_loss": statistics.mean(r[5] for r in rows)}
    return summary
