"""LI-5's pieces: choosing the tokens to keep, the attention scores behind the choice, the spurious marker."""

import pytest
import torch
from conftest import ROOT

from vitheory.images.models import patchify
from vitheory.images.training import build_model
from vitheory.li23.token_keeping import (
    add_marker,
    choose,
    marker_classes,
    marker_positions,
    token_scores,
    without_token,
)
from vitheory.params import load_params

VIT = load_params(ROOT / "params.yaml").real.models.vit


def test_token_choice_by_strategy():
    scores = torch.tensor([[0.1, 0.5, 0.2, 0.9], [0.8, 0.1, 0.3, 0.2]])
    generator = torch.Generator().manual_seed(0)
    assert choose(scores, 2, "attention", generator).tolist() == [[1, 3], [0, 2]]
    assert choose(scores, 2, "lowest", generator).tolist() == [[0, 2], [1, 3]]
    random = choose(scores, 3, "random", generator)
    assert random.shape == (2, 3) and all(len(set(row.tolist())) == 3 for row in random)


def test_token_scores_are_a_distribution_over_patches_per_image():
    torch.manual_seed(0)
    model = build_model(VIT, 8, 1, 10)
    scores = token_scores(model, torch.randn(5, 1, 8, 8))
    assert scores.shape == (5, 16) and (scores > 0).all() and (scores.sum(1) <= 1 + 1e-5).all()


def test_spurious_marker_sits_on_the_class_patch():
    positions = marker_positions(16, 10, seed=0)
    assert len(set(positions.tolist())) == 10
    x = torch.zeros(2, 1, 8, 8)
    marked = add_marker(x, torch.tensor([0, 3]), positions, 2, 7.0)
    for i, c in enumerate((0, 3)):
        patches = patchify(marked[i:i + 1], 2)[0]
        assert (patches[positions[c]] == 7.0).all() and patches.sum() == 7.0 * 4
    y = torch.arange(10).repeat(100)
    own = marker_classes(y, 0.9, 10, torch.Generator().manual_seed(0)) == y
    assert 0.88 < own.float().mean() < 0.94  # 0.9 plus a tenth of the random draws


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: a device bug (seen on an H200 run)")
def test_spurious_marker_takes_images_and_classes_on_the_gpu():
    """sparsify_real keeps images and labels on the training device; the marker positions stay on the CPU."""
    positions = marker_positions(16, 10, seed=0)
    marked = add_marker(torch.zeros(2, 1, 8, 8, device="cuda"), torch.tensor([0, 3], device="cuda"), positions, 2, 7.0)
    assert marked.device.type == "cuda" and marked.sum().item() == 2 * 7.0 * 4


def test_without_token_drops_exactly_the_named_patch():
    kept = without_token(3, 5, torch.tensor([0, 4, 2]))
    assert kept.tolist() == [[1, 2, 3, 4], [0, 1, 2, 3], [0, 1, 3, 4]]
