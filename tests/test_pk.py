"""[PK22] analyses: Hessian eigenvalues against a dense eigendecomposition, Fourier and variance
measures, band-passed noise."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.func import functional_call

from vitheory import pk
from vitheory.vision import SmallResNet, SmallViT


def dense_hessian(model, x, y) -> np.ndarray:
    names = [n for n, _ in model.named_parameters()]
    shapes = [p.shape for _, p in model.named_parameters()]
    sizes = [p.numel() for _, p in model.named_parameters()]
    flat = torch.cat([p.detach().reshape(-1) for _, p in model.named_parameters()])
    buffers = dict(model.named_buffers())

    def loss(vector):
        theta = {n: c.reshape(s) for n, c, s in zip(names, vector.split(sizes), shapes)}
        return F.cross_entropy(functional_call(model, (theta, buffers), (x,)), y)

    return torch.autograd.functional.hessian(loss, flat).numpy()


@pytest.mark.parametrize("build", [
    lambda: SmallViT(image_size=4, channels=1, n_classes=3, patch=2, depth=1, heads=1, width=4, mlp_ratio=1,
                     attention="vanilla", pool="cls"),
    lambda: SmallResNet(channels=1, n_classes=3, widths=[2], blocks=[1]),
])
def test_top_eigenvalues_match_a_dense_eigendecomposition(build):
    torch.manual_seed(0)
    model = build().double().eval()
    x, y = torch.randn(6, 1, 4, 4, dtype=torch.float64), torch.tensor([0, 1, 2, 0, 1, 2])
    dense = np.linalg.eigvalsh(dense_hessian(model, x, y))
    expected = np.sort(dense[np.argsort(-np.abs(dense))[:4]])
    found = pk.top_eigenvalues(pk.hessian_operator(model, F.cross_entropy, x, y), 4, seed=0)
    assert np.allclose(found, expected, rtol=1e-3, atol=1e-10), (found, expected)
    assert (dense < 0).any()  # a spectrum with negative eigenvalues: the comparison covers their sign


def test_high_frequency_delta_separates_smooth_from_checkerboard_maps():
    side = 8
    rows, cols = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")
    checker = ((rows + cols) % 2 * 2 - 1).double()  # all its energy at the corner frequency (pi, pi)
    smooth = torch.cos(2 * math.pi * rows / side).double() + 2
    as_tokens = lambda m: m.reshape(1, side * side, 1)  # noqa: E731
    assert pk.high_frequency_delta(as_tokens(checker)) > 10
    assert pk.high_frequency_delta(as_tokens(smooth)) < -10


def test_spatial_variance_and_change_by_kind():
    feature = torch.tensor([[[1.0, 0.0], [3.0, 0.0]]])  # one image, two positions, two channels
    assert pk.spatial_variance(feature) == pytest.approx((2.0 + 0.0) / 2)
    profile = [{"kind": "embed", "v": 1.0}, {"kind": "msa", "v": 0.5}, {"kind": "mlp", "v": 2.0},
               {"kind": "msa", "v": 1.0}, {"kind": "mlp", "v": 1.5}]
    assert pk.change_by_kind(profile, "v") == {"msa": pytest.approx(-0.75), "mlp": pytest.approx(1.0)}


def test_band_noise_sits_in_its_band_at_the_asked_rms():
    generator = torch.Generator().manual_seed(0)
    noise = pk.band_noise((3, 2, 8, 8), 1.0, 0.25, 0.5, generator)
    assert noise.pow(2).mean(dim=(1, 2, 3)).sqrt().tolist() == pytest.approx([0.5] * 3, rel=1e-5)
    spectrum = torch.fft.fft2(noise.double()).abs()
    frequency = torch.fft.fftfreq(8).abs() * 2
    radius = torch.maximum(frequency[:, None], frequency[None, :])
    assert spectrum[..., radius != 1.0].max() < 1e-6  # only the outermost ring (1.0 pi) is left
    low = pk.band_noise((3, 2, 8, 8), 0.0, 0.25, 0.5, generator)
    assert torch.allclose(low, low[..., :1, :1].expand_as(low), atol=1e-6)  # frequency 0: a constant map
    with pytest.raises(ValueError, match="no frequency"):
        pk.band_noise((1, 1, 8, 8), 0.6, 0.05, 0.5, generator)
