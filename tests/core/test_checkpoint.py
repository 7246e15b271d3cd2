"""Checkpoints: the folder alone rebuilds the model, in any interpreter; bad ones are one line."""

import json

import pytest
import torch

from vitheory import load_checkpoint, save_checkpoint
from vitheory.core.checkpoint import MODEL_CLASSES, MODEL_MODULES, model_class
from vitheory.core.errors import ArtifactError
from vitheory.li23.models import ShallowViT

CONFIG = {"dim": 8, "width": 6, "qk_init": 0.5, "out_init_std": 0.3}


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
    with pytest.raises(ArtifactError, match="names model class 'NoSuchModel', which this version of vitheory does "
                                            "not define") as err:
        load_checkpoint(tmp_path / "ckpt")
    assert "dvc repro" not in str(err.value)  # a good artifact is not sent to be rebuilt


def test_a_truncated_checkpoint_is_one_line_naming_the_file(tmp_path):
    save_checkpoint(tmp_path / "ckpt", ShallowViT(**CONFIG), {})
    tensors = tmp_path / "ckpt" / "model.safetensors"
    tensors.write_bytes(tensors.read_bytes()[:-100])
    with pytest.raises(ArtifactError) as err:
        load_checkpoint(tmp_path / "ckpt")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{tensors}: not a readable safetensors file")
    assert message.endswith("run `dvc repro` to rebuild it")  # outside the pipeline: no stage to name


def test_every_model_module_registers_its_classes():
    """load_checkpoint imports MODEL_MODULES for a class it has not seen: each must define some."""
    for module in MODEL_MODULES:
        __import__(module)
    homes = {cls.__module__ for cls in MODEL_CLASSES.values()}
    assert homes == set(MODEL_MODULES)
    assert model_class("SmallViT").__module__ == "vitheory.images.models"
    assert model_class("NoSuchModel") is None
