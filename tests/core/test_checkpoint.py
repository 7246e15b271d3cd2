"""Checkpoints: the folder alone rebuilds the model, in any interpreter; bad ones are one line."""

import json
import subprocess
import sys

import pytest
import torch

from vitheory import load_checkpoint, save_checkpoint
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
    assert config["class"] == "vitheory.li23.models.ShallowViT" and config["metadata"] == {"note": "test"}


def test_checkpoint_whose_config_does_not_match_its_tensors(tmp_path):
    save_checkpoint(tmp_path / "ckpt", ShallowViT(**CONFIG), {})
    path = tmp_path / "ckpt" / "config.json"
    config = json.loads(path.read_text())
    config["config"]["width"] = 10
    path.write_text(json.dumps(config))
    with pytest.raises(ArtifactError, match=r"model\.safetensors: tensors do not match config\.json"):
        load_checkpoint(tmp_path / "ckpt")


@pytest.mark.parametrize("path", ["vitheory.li23.models.NoSuchModel", "vitheory.li22.models.ShallowViT",
                                  "vitheory.li23.models.builder", "vitheory.li23.models.torch"])
def test_a_class_this_version_does_not_define_is_one_line(tmp_path, path):
    save_checkpoint(tmp_path / "ckpt", ShallowViT(**CONFIG), {})
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(config | {"class": path}))
    with pytest.raises(ArtifactError, match=f"names model class '{path}', which this version of vitheory does "
                                            "not define as an nn.Module; load it with the version") as err:
        load_checkpoint(tmp_path / "ckpt")
    assert "dvc repro" not in str(err.value)  # a good artifact is not sent to be rebuilt


@pytest.mark.parametrize("path", ["ShallowViT", "collections.OrderedDict", "os.system", "vitheory", None])
def test_a_class_outside_vitheory_is_refused_before_anything_is_imported(tmp_path, path):
    """A bare name (as older versions wrote) or any other module: config.json cannot make loading run code."""
    save_checkpoint(tmp_path / "ckpt", ShallowViT(**CONFIG), {})
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(config | {"class": path}))
    with pytest.raises(ArtifactError, match=f"names model class {path!r}, not an import path under vitheory"):
        load_checkpoint(tmp_path / "ckpt")


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


def test_loading_imports_the_module_of_the_class_alone(tmp_path):
    """A fresh interpreter loads an images checkpoint without importing any paper's package."""
    from vitheory.images.models import SmallViT

    model = SmallViT(image_size=4, channels=1, n_classes=2, patch=2, depth=1, heads=1, width=2, mlp_ratio=1,
                     attention="vanilla", pool="cls")
    save_checkpoint(tmp_path / "ckpt", model, {})
    script = ("import sys, vitheory\n"
              "model = vitheory.load_checkpoint(sys.argv[1])\n"
              "print(type(model).__module__, sorted({m.split('.')[1] for m in sys.modules if m.startswith('vitheory.')}))")
    run = subprocess.run([sys.executable, "-c", script, str(tmp_path / "ckpt")], capture_output=True, text=True,
                         check=True)
    assert run.stdout.split(" ", 1) == ["vitheory.images.models", "['core', 'images']\n"]
