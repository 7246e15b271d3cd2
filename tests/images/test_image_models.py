"""The small image models shared by the real-image claims, and their training pieces."""

from dataclasses import replace
from functools import partial

import pytest
import torch
import yaml
from conftest import ROOT

from vitheory.core.checkpoint import load_checkpoint, save_checkpoint
from vitheory.images import datasets as images
from vitheory.images.models import SmallViT, patchify
from vitheory.images.params import REAL_MODELS
from vitheory.images.recipe import FitTask, augment, permute_pixels
from vitheory.images.training import (
    Normalizer,
    build_model,
    evaluate,
    fit,
    patch_order,
    pixel_permutation,
    run_task,
    run_tasks,
)
from vitheory.params import load_params, parse_params
from vitheory.pk22.trainings import build_alternet
from vitheory.preset import merge

PARAMS = load_params(ROOT / "params.yaml")
PAPER = parse_params(merge(yaml.safe_load((ROOT / "params.yaml").read_text()),
                           yaml.safe_load((ROOT / "presets/paper.yaml").read_text())))
PRESETS = {"vit": PARAMS.real.models.vit, "vit_positional": PARAMS.real.models.vit_positional,
           "cnn": PARAMS.real.models.cnn, "vit_depth1_gap": replace(PARAMS.real.models.vit, depth=1, pool="gap"),
           "paper_vit": PAPER.real.models.vit, "paper_vit_positional": PAPER.real.models.vit_positional,
           "paper_cnn": PAPER.real.models.cnn, "alternet": PARAMS.pk_train.alternet}


def layer_norm(width: int) -> int:
    return 2 * width  # gain and bias


def linear(fan_in: int, fan_out: int) -> int:
    return fan_in * fan_out + fan_out


def transformer_block(width: int, mlp_ratio: int) -> int:
    """Two norms; queries and keys from one 2w-output map, values, output; the MLP's two layers."""
    attention = linear(width, 2 * width) + linear(width, width) + linear(width, width)
    return 2 * layer_norm(width) + attention + linear(width, mlp_ratio * width) + linear(mlp_ratio * width, width)


def vit_parameters(preset, size: int, channels: int, classes: int) -> int:
    """Patch embedding, a positional encoding per patch (and the class token's, and the class token),
    depth blocks, the final norm, the head."""
    tokens = (size // preset.patch) ** 2 + (preset.pool == "cls")
    return (linear(preset.patch ** 2 * channels, preset.width) + tokens * preset.width
            + (preset.pool == "cls") * preset.width + preset.depth * transformer_block(preset.width, preset.mlp_ratio)
            + layer_norm(preset.width) + linear(preset.width, classes))


def conv_net_parameters(preset, size: int, channels: int, classes: int) -> int:
    """3 x 3 stem without bias and its batch norm; per residual block two bias-free 3 x 3 convolutions with
    batch norms (2 parameters a channel), and a 1 x 1 projection with its norm where the shape changes;
    AlterNet's attention blocks: a positional encoding per position of the map, a transformer block
    with MLP ratio 2; the head."""
    total = 9 * channels * preset.widths[0] + 2 * preset.widths[0]
    c_in, side = preset.widths[0], size
    for stage, (width, count) in enumerate(zip(preset.widths, preset.blocks)):
        attention = getattr(preset, "attention", [0] * len(preset.blocks))[stage]
        for i in range(count):
            if i >= count - attention:
                total += side * side * width + transformer_block(width, 2)
                continue
            stride = 2 if stage > 0 and i == 0 else 1
            total += 9 * c_in * width + 2 * width + 9 * width * width + 2 * width
            if stride != 1 or c_in != width:
                total += c_in * width + 2 * width
            c_in, side = width, side // stride
    return total + linear(c_in, classes)


def test_the_parameter_formulas_count_a_model_by_hand():
    """The default ViT on 8 x 8 digits, by hand: embedding 4 x 64 + 64; 17 positional encodings and the
    class token, 18 x 64; per block 4 x 64 (norms) + 64 x 128 + 128 + 2 (64 x 64 + 64) + 64 x 128 + 128 +
    128 x 64 + 64 = 33472, two blocks; final norm 128; head 64 x 10 + 10."""
    assert vit_parameters(PRESETS["vit"], 8, 1, 10) == 320 + 18 * 64 + 2 * 33472 + 128 + 650
@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_runs_forward_and_backward_with_the_size_its_architecture_gives(name):
    torch.manual_seed(0)
    size, channels = (32, 3) if name.startswith("paper") else (8, 1)
    model = (build_alternet if name == "alternet" else build_model)(PRESETS[name], size, channels, 10)
    count = (vit_parameters if "vit" in name else conv_net_parameters)(PRESETS[name], size, channels, 10)
    assert sum(p.numel() for p in model.parameters()) == count
    logits, extras = model(torch.randn(4, channels, size, size), return_features=True)
    assert logits.shape == (4, 10)
    logits.logsumexp(-1).sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters() if p.requires_grad)
    kinds = [kind for kind, _ in extras["features"]]
    if name.endswith("cnn"):
        assert kinds == ["embed"] + ["conv"] * sum(PRESETS[name].blocks)
    elif name == "alternet":  # conv blocks, then the attention blocks closing each stage (msa, mlp)
        preset = PRESETS[name]
        assert kinds == ["embed"] + [kind for b, a in zip(preset.blocks, preset.attention)
                                     for kind in ["conv"] * (b - a) + ["msa", "mlp"] * a]
    else:
        assert kinds == ["embed"] + ["msa", "mlp"] * PRESETS[name].depth
        tokens = (size // PRESETS[name].patch) ** 2
        assert all(f.shape == (4, tokens, PRESETS[name].width) for _, f in extras["features"])  # no class token
        assert len(extras["attention"]) == PRESETS[name].depth


@pytest.mark.parametrize("name", REAL_MODELS)
def test_every_registered_model_runs_forward_backward_and_one_training_step(name):
    """Every model of the registry, a new one included: logits of the right shape, a finite gradient for
    every parameter, and one AdamW step of `fit` (8 images, one batch) that moves every parameter."""
    torch.manual_seed(0)
    model = build_model(getattr(PARAMS.real.models, name), 8, 1, 10)
    x, y = torch.randn(8, 1, 8, 8), torch.arange(8)
    logits = model(x)
    assert logits.shape == (8, 10)
    torch.nn.functional.cross_entropy(logits, y).backward()
    unreached = [k for k, p in model.named_parameters() if p.grad is None or not torch.isfinite(p.grad).all()]
    assert not unreached, f"{name}: parameters without a finite gradient: {unreached}"
    before = {k: p.detach().clone() for k, p in model.named_parameters()}
    fit(model, x, y, PARAMS.real, epochs=1, seed=0, progress=False)
    unmoved = [k for k, p in model.named_parameters() if torch.equal(p, before[k])]
    assert not unmoved, f"{name}: parameters one optimiser step left as they were: {unmoved}"


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


@pytest.mark.parametrize("attention", ["positional", "vanilla"])
def test_a_sparsified_vit_sees_only_the_kept_patches_each_at_its_own_position(attention):
    """Keeping tokens [0, 5, 7]: the dropped patches' pixels do not matter and a kept one's do; the
    order in which `keep` names them does not either (each token carries its own positional encoding)."""
    torch.manual_seed(0)
    model = SmallViT(image_size=8, channels=1, n_classes=10, patch=2, depth=1, heads=2, width=8, mlp_ratio=1,
                     attention=attention, pool="cls").eval()
    x = torch.randn(2, 1, 8, 8)
    keep = torch.tensor([[0, 5, 7], [0, 5, 7]])
    logits = model(x, keep=keep)
    assert logits.shape == (2, 10)
    dropped = x.clone()
    dropped[:, :, 0:2, 2:4] += 5.0  # patch 1, not kept
    assert torch.allclose(model(dropped, keep=keep), logits, atol=1e-6)
    kept = x.clone()
    kept[:, :, 2:4, 2:4] += 5.0  # patch 5, kept
    assert not torch.allclose(model(kept, keep=keep), logits, atol=1e-3)
    assert torch.allclose(model(x, keep=torch.tensor([[7, 0, 5], [5, 7, 0]])), logits, atol=1e-5)


def test_seeds_side_by_side_train_as_each_would_alone():
    """run_tasks' worker processes are a matter of speed: the same bytes as training in-process."""
    data = images.split(images.load_dataset("digits", "unused"), val_fraction=0.1, test_fraction=0.2,
                        train_fraction=0.1, seed=0)
    normalize = Normalizer.fit(data["train"])
    x, y = normalize(data["train"]), data["train"].y
    held_out = {"val": (normalize(data["val"]), data["val"].y)}
    build = partial(build_model, PRESETS["cnn"], 8, 1, 10)
    tasks = [FitTask(build, PARAMS.real, x, y, 2, seed, held_out) for seed in (0, 1)]
    side_by_side = run_tasks(tasks, torch.device("cpu"), progress=False)
    for task, result in zip(tasks, side_by_side):
        alone = run_task(task, "cpu", progress=False)
        assert all(torch.equal(alone.weights[k], v) for k, v in result.weights.items())
        assert alone.log == result.log and len(result.log) == 2 and set(result.final) == {"val"}
    assert not torch.equal(side_by_side[0].weights["head.weight"], side_by_side[1].weights["head.weight"])


@pytest.mark.parametrize("epochs", [2, 3])
def test_the_final_held_out_metrics_are_those_of_the_returned_weights(epochs):
    """run_task takes its final metrics from the last epoch's evaluation instead of evaluating again:
    they must be the returned model's, to the bit, whether or not the last epoch is an eval_every one."""
    data = images.split(images.load_dataset("digits", "unused"), val_fraction=0.1, test_fraction=0.2,
                        train_fraction=0.1, seed=0)
    normalize = Normalizer.fit(data["train"])
    held_out = {name: (normalize(data[name]), data[name].y) for name in ("val", "test")}
    build = partial(build_model, PRESETS["cnn"], 8, 1, 10)
    cfg = replace(PARAMS.real, eval_every=2)
    result = run_task(FitTask(build, cfg, normalize(data["train"]), data["train"].y, epochs, 0, held_out), "cpu",
                      progress=False)
    model = build()
    model.load_state_dict(result.weights)
    assert result.final == {name: evaluate(model, x, y) for name, (x, y) in held_out.items()}
