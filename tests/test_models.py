import json

import pytest
import torch

from vitheory import load_checkpoint, save_checkpoint
from vitheory.errors import ArtifactError
from vitheory.models import ShallowViT

CONFIG = {"dim": 8, "width": 6, "qk_init": 0.5, "out_init_std": 0.3}


def test_shapes_and_attention_rows_sum_to_one():
    model = ShallowViT(**CONFIG)
    x = torch.randn(5, 7, 8)
    out, attn = model(x, return_attention=True)
    assert out.shape == (5,) and attn.shape == (5, 7, 7)
    assert torch.allclose(attn.sum(-1), torch.ones(5, 7))
    assert torch.equal(model(x), out)


def test_readout_is_fixed_at_plus_minus_one_over_m():
    model = ShallowViT(**CONFIG)
    assert sorted(model.a.tolist()) == pytest.approx([-1 / 6] * 3 + [1 / 6] * 3)
    assert "a" not in dict(model.named_parameters())


def test_every_trained_tensor_gets_a_gradient():
    torch.manual_seed(0)
    model = ShallowViT(**CONFIG)
    x = torch.randn(4, 7, 8)
    model(x).pow(2).sum().backward()
    names = {name for name, _ in model.named_parameters()}
    assert names == {"W_Q", "W_K", "W_V", "W_O"}
    for name, param in model.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name
    assert {name: model.param_group(name) for name in names} == {
        "W_Q": "mixing", "W_K": "mixing", "W_V": "mlp", "W_O": "mlp"}


def test_checkpoint_rebuilds_the_same_model(tmp_path):
    torch.manual_seed(1)
    model = ShallowViT(**CONFIG)
    save_checkpoint(tmp_path / "ckpt", model, {"note": "test"})
    loaded = load_checkpoint(tmp_path / "ckpt")
    x = torch.randn(3, 7, 8)
    assert torch.equal(loaded(x), model(x))
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert config["class"] == "ShallowViT" and config["metadata"] == {"note": "test"}


def test_checkpoint_whose_config_does_not_match_its_tensors(tmp_path):
    save_checkpoint(tmp_path / "ckpt", ShallowViT(**CONFIG), {})
    path = tmp_path / "ckpt" / "config.json"
    config = json.loads(path.read_text())
    config["config"]["width"] = 10
    path.write_text(json.dumps(config))
    with pytest.raises(ArtifactError, match=r"model\.safetensors: tensors do not match config\.json"):
        load_checkpoint(tmp_path / "ckpt")
    config["class"] = "NoSuchModel"
    path.write_text(json.dumps(config))
    with pytest.raises(ArtifactError, match="names model class 'NoSuchModel'"):
        load_checkpoint(tmp_path / "ckpt")


def test_a_truncated_checkpoint_is_one_line_naming_the_file_and_the_stage(tmp_path):
    save_checkpoint(tmp_path / "ckpt", ShallowViT(**CONFIG), {})
    tensors = tmp_path / "ckpt" / "model.safetensors"
    tensors.write_bytes(tensors.read_bytes()[:-100])
    with pytest.raises(ArtifactError) as err:
        load_checkpoint(tmp_path / "ckpt", "train_real@vit-natural")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{tensors}: not a readable safetensors file")
    assert message.endswith("run `dvc repro train_real@vit-natural` to rebuild it")
