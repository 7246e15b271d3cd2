"""Cluttered translated digits: disjoint sources, labels, shapes, the digit where its box says, clutter
from the split's own digits, and same params, same bytes."""

from dataclasses import replace

import pytest
import torch
import yaml
from conftest import ROOT

from vitheory.images.cluttered import cluttered_splits, compose, upscale
from vitheory.images.datasets import read_digits
from vitheory.images.params import ClutteredParams
from vitheory.papers import PAPERS
from vitheory.params import ParamsError, parse_params
from vitheory.preset import merge


CLUTTERED = parse_params(yaml.safe_load((ROOT / "params.yaml").read_text()))  # the default regime (issue 25)


@pytest.fixture(scope="module")
def images_cfg():
    return CLUTTERED.images


@pytest.fixture(scope="module")
def splits(images_cfg):
    return cluttered_splits(read_digits().train, images_cfg)


def test_splits_share_no_source_digit_and_labels_are_the_sources(splits, images_cfg):
    digits = read_digits().train
    sources = {name: set(split["source"].tolist()) for name, split in splits.items()}
    assert not sources["train"] & sources["val"] and not sources["train"] & sources["test"]
    assert not sources["val"] & sources["test"]
    for split in splits.values():
        assert torch.equal(split["y"], digits.y[split["source"]])
        canvas = images_cfg.cluttered.canvas
        assert split["X"].shape[1:] == (canvas, canvas, 1) and split["X"].dtype == torch.uint8
    for name, split in splits.items():
        assert len(split["X"]) == images_cfg.cluttered.copies * len(sources[name])


def test_each_canvas_holds_its_digit_in_its_box(splits, images_cfg):
    digits = read_digits().train
    cfg = images_cfg.cluttered
    side = cfg.digit_side
    split = splits["test"]
    for i in range(0, len(split["X"]), 97):
        row, col = split["box"][i].tolist()
        window = split["X"][i, row:row + side, col:col + side, 0]
        digit = upscale(digits.X[split["source"][i], ..., 0][None], cfg.scale)[0]
        assert (window >= digit).all()  # clutter combines by maximum: never hides a stroke


def test_most_tokens_are_label_irrelevant(splits, images_cfg):
    """The preset's ViT sees at least an 8 x 8 grid, of which the digit's box touches under 40%."""
    cfg, patch = images_cfg.cluttered, CLUTTERED.real.models.vit.patch
    grid, side = cfg.canvas // patch, cfg.digit_side
    assert grid >= 8
    box = splits["train"]["box"]
    touched = (((box + side - 1) // patch) - box // patch + 1).prod(dim=1)
    assert touched.float().mean() / grid ** 2 < 0.4


def test_clutter_comes_from_other_digits_of_the_split():
    digits = torch.zeros(3, 8, 8, dtype=torch.uint8)
    digits[1] = 100  # only digit 1 has ink: clutter on digits 0 and 2 must come from it, none on digit 1
    cfg = replace_cluttered(fragments=4, copies=1)
    made = compose(digits, torch.arange(3), cfg, torch.Generator().manual_seed(0))
    side = cfg.digit_side
    for i in (0, 2):
        assert made["X"][i].max() == 100
    row, col = made["box"][1].tolist()
    outside = made["X"][1, ..., 0].clone()
    outside[row:row + side, col:col + side] = 0
    assert outside.max() == 0


def replace_cluttered(**changes):
    return replace(ClutteredParams(canvas=32, scale=2, fragments=6, fragment=6, copies=2, jitter=8), **changes)


@pytest.mark.parametrize("jitter", [0, 2, 8])
def test_a_digit_lands_at_most_jitter_from_the_centre_and_uses_that_room(jitter):
    digits = read_digits().train
    cfg = replace_cluttered(jitter=jitter)
    made = compose(digits.X[:200, ..., 0], digits.y[:200], cfg, torch.Generator().manual_seed(0))
    offset = made["box"] - (cfg.canvas - cfg.digit_side) // 2
    assert offset.abs().max() == jitter  # 400 canvases reach the bound, never more
    assert offset.min() == -jitter


def test_a_jitter_beyond_the_canvas_names_the_key():
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["images"]["cluttered"] |= {"canvas": 32, "scale": 2, "jitter": 9}
    with pytest.raises(ParamsError, match=r"images.cluttered.jitter = 9.*<= half the room around the upscaled digit \(8"):
        parse_params(raw)


def test_same_seed_same_bytes_other_seed_other_canvases(images_cfg, splits):
    again = cluttered_splits(read_digits().train, images_cfg)
    assert all(torch.equal(again[name]["X"], splits[name]["X"]) for name in splits)
    other = cluttered_splits(read_digits().train, replace(images_cfg, seed=1))
    assert not torch.equal(other["test"]["X"][:10], splits["test"]["X"][:10])


def test_every_real_image_verdict_names_the_cluttered_regime_it_ran_in():
    real_image_claims = {"LI-5", "JSL-5", "JSL-6"} | {f"PK-{i}" for i in range(1, 9)}
    claims = {claim.id: claim for paper in PAPERS for claim in paper.claims if claim.id in real_image_claims}
    assert claims.keys() == real_image_claims
    built = CLUTTERED.images.cluttered
    regime = (f"`cluttered_digits` (a digit of 8 x 8 pixels centred on a {built.canvas} x {built.canvas} canvas "
              f"among {built.fragments} fragments of {built.fragment} x {built.fragment}")
    for claim_id, claim in claims.items():
        assert regime in claim.regime(CLUTTERED), claim_id
    moved = parse_params(merge(yaml.safe_load((ROOT / "params.yaml").read_text()),
                               {"images": {"cluttered": {"jitter": 2}}}))
    assert "8 x 8 pixels at most 2 px from the centre of a 16 x 16 canvas" in claims["PK-1"].regime(moved)


def test_the_default_regime_is_cluttered_with_an_8_by_8_token_grid_and_the_quick_preset_is_the_digits(quick_params):
    assert CLUTTERED.images.dataset == "cluttered_digits"
    built, vit = CLUTTERED.images.cluttered, CLUTTERED.real.models.vit
    grid = built.canvas // vit.patch
    assert grid >= 8 and built.digit_side ** 2 / built.canvas ** 2 <= 0.25  # most tokens carry no digit
    quick = quick_params
    assert quick.images.dataset == "digits"
