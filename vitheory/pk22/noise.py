"""[PK22] PK-5: accuracy under random noise band-passed at one frequency, under each normalisation of the
noise (`NORMALISATIONS`); which one decides PK-5 is its claim's (vitheory.pk22.claims, `NOISE_DECIDES`)."""

from __future__ import annotations

import torch
from torch import nn

from vitheory.core.errors import ParamsError
from vitheory.core.metrics import class_mistakes
from vitheory.pk22.params import PKParams

COLUMNS = {"model": str, "seed": int, "normalisation": str, "frequency": float, "clean_accuracy": float,
           "accuracy_drop": float}
# each normalisation of the noise, in the order noise_rows draws them, and what it is
NORMALISATIONS = {
    "rms": "Gaussian noise scaled to one root-mean-square in every band (ours: equal energy per band)",
    "official": ("[PK22]'s attack (FreqAttack on its Random attack): sign noise of one size per pixel through each "
                 "ring, not rescaled, so that its energy is in proportion to the ring's size"),
}


def band_mask(h: int, w: int, frequency: float, bandwidth: float) -> torch.Tensor:
    """(H, W): the frequencies whose radius max(|f_x|, |f_y|), in units of pi, lies within bandwidth / 2
    of `frequency`."""
    fy = torch.fft.fftfreq(h, dtype=torch.float64).abs()[:, None] * 2  # 1.0 = pi
    fx = torch.fft.fftfreq(w, dtype=torch.float64).abs()[None, :] * 2
    return (torch.maximum(fy, fx) - frequency).abs() <= bandwidth / 2 + 1e-9


def check_frequencies(image_size: int, cfg: PKParams) -> None:
    """Refuse, before any compute, a noise band that holds no frequency of the images."""
    for frequency in cfg.frequencies:
        if not band_mask(image_size, image_size, frequency, cfg.bandwidth).any():
            raise ParamsError(f"pk.frequencies: no frequency of a {image_size} x {image_size} image lies within "
                              f"pk.bandwidth / 2 = {cfg.bandwidth / 2:g} of {frequency:g} pi; use multiples of "
                              f"{2 / image_size:g} (or widen pk.bandwidth) in params.yaml")


def band_pass(noise: torch.Tensor, frequency: float, bandwidth: float) -> torch.Tensor:
    """`noise` (B, C, H, W) keeping only frequencies whose radius max(|f_x|, |f_y|), in units of pi, lies
    within bandwidth / 2 of `frequency`: a square ring like the official attack's, but symmetric about
    f = 0 (see docs/PK22.md)."""
    mask = band_mask(*noise.shape[-2:], frequency, bandwidth)
    if not mask.any():
        raise ValueError(f"no frequency of a {noise.shape[-2]} x {noise.shape[-1]} image lies within "
                         f"{bandwidth / 2} of {frequency} pi")
    return torch.fft.ifft2(torch.fft.fft2(noise) * mask).real


def band_noise(shape: tuple[int, ...], frequency: float, bandwidth: float, rms: float,
               generator: torch.Generator) -> torch.Tensor:
    """Gaussian noise (B, C, H, W) band-passed at `frequency`, scaled to root-mean-square `rms` per image."""
    filtered = band_pass(torch.randn(shape, generator=generator, dtype=torch.float64), frequency, bandwidth)
    scale = filtered.pow(2).mean(dim=(1, 2, 3), keepdim=True).sqrt().clamp_min(1e-12)
    return (filtered / scale * rms).float()


def sign_band_noise(shape: tuple[int, ...], frequency: float, bandwidth: float, eps: float,
                    generator: torch.Generator) -> torch.Tensor:
    """The official attack's noise: eps * sign(N(0, 1)) per pixel, band-passed at `frequency` and not
    rescaled, so its energy is the ring's share of the spectrum."""
    sign = torch.randn(shape, generator=generator, dtype=torch.float64).sign()
    return band_pass(eps * sign, frequency, bandwidth).float()


@torch.no_grad()
def noisy_accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, noise: torch.Tensor) -> float:
    model.eval()
    return float((~class_mistakes(model(x + noise), y)).float().mean())


def noise_rows(name: str, seed: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor, cfg: PKParams) -> list[tuple]:
    """The accuracy drop of one model at every frequency of `cfg` under each normalisation, as rows of
    `COLUMNS`; the same noise draws for every model and seed, and the official noise is the sign of
    the same Gaussian draws."""
    clean = noisy_accuracy(model, x, y, torch.zeros_like(x))
    draw = {"rms": lambda f, g: band_noise(tuple(x.shape), f, cfg.bandwidth, cfg.noise_rms, g),
            "official": lambda f, g: sign_band_noise(tuple(x.shape), f, cfg.bandwidth, cfg.sign_noise_eps, g)}
    rows = []
    for normalisation in NORMALISATIONS:
        generator = torch.Generator().manual_seed(cfg.noise_seed)
        for frequency in cfg.frequencies:
            noise = draw[normalisation](frequency, generator).to(x.device)
            rows.append((name, seed, normalisation, frequency, clean, clean - noisy_accuracy(model, x, y, noise)))
    return rows
