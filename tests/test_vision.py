"""Small image models, the real-image training pieces and the LI-5 token selection."""

from dataclasses import replace

import pytest
import torch
import yaml
from conftest import ROOT

from vitheory import images
from vitheory.checkpoint import load_checkpoint, save_checkpoint
from vitheory.params import load_params, parse_params
from vitheory.preset import merge
from vitheory.real import (
    Normalizer,
    augment,
    build_model,
    evaluate,
    fit,
    patch_order,
    permute_pixels,
    pixel_permutation,
)
from vitheory.real_sparsify import (
    add_marker,
    choose,
    marker_classes,
    marker_positions,
    token_scores,
)
from vitheory.vision import SmallViT, patchify

PARAMS = load_params(ROOT / "params.yaml")
PAPER = parse_params(merge(yaml.safe_load((ROOT / "params.yaml").read_text()),
                           yaml.safe_load((ROOT / "presets/paper.yaml").read_text())))
PRESETS = {"vit": PARAMS.real.models.vit, "vit_positional": PARAMS.real.models.vit_positional,
           "cnn": PARAMS.real.models.cnn, "vit_depth1_gap": replace(PARAMS.real.models.vit, depth=1, pool="gap"),
           "paper_vit": PAPER.real.models.vit, "paper_vit_positional": PAPER.real.models.vit_positional,
           "paper_cnn": PAPER.real.models.cnn, "alternet": PARAMS.pk_train.alternet}
# parameter counts (8 x 8 x 1 digits; 32 x 32 x 3 for the paper preset; 10 classes): an architecture
# change has to change these
PARAMETER_COUNTS = {"vit": 69194, "vit_positional": 69194, "cnn": 19706, "vit_depth1_gap": 35594,
                    "paper_vit": 1806538, "paper_vit_positional": 1806538, "paper_cnn": 2777674, "alternet": 32010}


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_runs_forward_and_backward_with_its_pinned_size(name):
    torch.manual_seed(0)
    size, channels = (32, 3) if name.startswith("paper") else (8, 1)
    model = build_model(PRESETS[name], size, channels, 10)
    assert sum(p.numel() for p in model.parameters()) == PARAMETER_COUNTS[name]
    logits, extras = model(torch.randn(4, channels, size, size), return_features=True)
    assert logits.shape == (4, 10)
    logits.logsumexp(-1).sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters() if p.requires_grad)
    kinds = [kind for kind, _ in extras["features"]]
    if name.endswith("cnn"):
        assert kinds == ["embed"] + ["conv"] * sum(PRESETS[name].blocks)
    elif name == "alternet":
        assert kinds == ["embed"] + ["conv", "msa", "mlp"] * len(PRESETS[name].blocks)
    else:
        assert kinds == ["embed"] + ["msa", "mlp"] * PRESETS[name].depth
        tokens = (size // PRESETS[name].patch) ** 2
        assert all(f.shape == (4, tokens, PRESETS[name].width) for _, f in extras["features"])  # no class token
        assert len(extras["attention"]) == PRESETS[name].depth


def test_patchify_is_row_major():
    image = torch.arange(16.0).reshape(1, 1, 4, 4)
    assert patchify(image, 2)[0].tolist() == [[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 12, 13], [10, 11, 14, 15]]


def test_positional_attention_is_the_same_for_every_image_and_vanilla_is_not():
    torch.manual_seed(0)
    x = torch.randn(3, 1, 8, 8)
    for name, shared in (("vit_positional", True), ("vit", False)):
        _, extras = build_model(PRESETS[name], 8, 1, 10)(x, return_features=True)
        maps = extras["attention"][0]
        assert torch.allclose(maps[0], maps[1]) is shared


def test_keeping_every_token_changes_nothing():
    torch.manual_seed(0)
    for name in ("vit", "vit_positional", "vit_depth1_gap"):
        model = build_model(PRESETS[name], 8, 1, 10).eval()
        x = torch.randn(2, 1, 8, 8)
        everything = torch.arange(16).expand(2, -1)
        assert torch.allclose(model(x), model(x, keep=everything), atol=1e-5)


def test_checkpoints_rebuild_the_image_models(tmp_path):
    for name in ("vit_positional", "cnn"):
        model = build_model(PRESETS[name], 8, 1, 10).eval()
        save_checkpoint(tmp_path / name, model, {"stage": "test"})
        x = torch.randn(2, 1, 8, 8)
        assert torch.equal(load_checkpoint(tmp_path / name)(x), model(x))


def test_block_permutation_moves_whole_patches_and_can_be_undone():
    permutation = pixel_permutation(8, 8, 2, seed=0)
    assert sorted(permutation.tolist()) == list(range(64))
    image = torch.arange(64.0).reshape(1, 1, 8, 8)
    permuted = permute_pixels(image, permutation)
    source = patch_order(permutation, 8, 2)
    assert source is not None and sorted(source.tolist()) == list(range(16))
    # token i of the permuted image is natural patch source[i], intact
    assert torch.equal(patchify(permuted, 2)[0], patchify(image, 2)[0][source])
    assert patch_order(pixel_permutation(8, 8, 1, seed=0), 8, 2) is None  # single pixels split patches


def test_augmentation_shifts_within_the_padding_and_is_seeded():
    x = torch.arange(16.0).reshape(1, 1, 4, 4).expand(8, -1, -1, -1)
    assert torch.equal(augment(x, 0, False, torch.Generator()), x)
    shifted = augment(x, 1, False, torch.Generator().manual_seed(0))
    assert torch.equal(shifted, augment(x, 1, False, torch.Generator().manual_seed(0)))
    for image in shifted:  # a translation by at most one pixel: the centre 2 x 2 survives somewhere
        assert any(torch.equal(image[0, 1 + dy:3 + dy, 1 + dx:3 + dx], x[0, 0, 1:3, 1:3])
                   for dy in (-1, 0, 1) for dx in (-1, 0, 1))


def test_a_short_training_learns_digits():
    data = images.split(images.load_dataset("digits", "unused"), val_fraction=0.1, test_fraction=0.2,
                        train_fraction=0.3, seed=0)
    normalize = Normalizer.fit(data["train"])
    x, y = normalize(data["train"]), data["train"].y
    torch.manual_seed(0)
    model = build_model(PRESETS["cnn"], 8, 1, 10)
    fit(model, x, y, PARAMS.real, epochs=8, seed=0, progress=False)
    assert evaluate(model, normalize(data["test"]), data["test"].y)["accuracy"] > 0.5  # chance: 0.1


def test_token_choice_by_strategy():
    scores = torch.tensor([[0.1, 0.5, 0.2, 0.9], [0.8, 0.1, 0.3, 0.2]])
    generator = torch.Generator().manual_seed(0)
    assert choose(scores, 2, "attention", generator).tolist() == [[1, 3], [0, 2]]
    assert choose(scores, 2, "lowest", generator).tolist() == [[0, 2], [1, 3]]
    random = choose(scores, 3, "random", generator)
    assert random.shape == (2, 3) and all(len(set(row.tolist())) == 3 for row in random)


def test_token_scores_are_a_distribution_over_patches_per_image():
    torch.manual_seed(0)
    model = build_model(PRESETS["vit"], 8, 1, 10)
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


def test_sparsified_vit_rejects_nothing_it_needs():
    model = SmallViT(image_size=8, channels=1, n_classes=10, patch=2, depth=1, heads=2, width=8, mlp_ratio=1,
                     attention="positional", pool="cls")
    keep = torch.tensor([[0, 5, 7], [1, 2, 3]])
    assert model(torch.randn(2, 1, 8, 8), keep=keep).shape == (2, 10)
