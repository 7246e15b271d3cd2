"""Fashion-MNIST: the idx reader on small idx files written here (no download, no Debian package), each
refusal in one line, the pinned checksums, the prepare_images stage on a written set, and the preset's
regime on 28 x 28 images."""

import gzip
import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import yaml
from conftest import ROOT

from vitheory.core.artifacts import read_meta
from vitheory.core.paths import artifact
from vitheory.images.datasets import (
    FASHION_MNIST_SHA256,
    DatasetUnavailable,
    balanced_subset,
    load_prepared,
    read_fashion_mnist,
    split,
)
from vitheory.images.training import build_model, fit, load_images
from vitheory.params import parse_params
from vitheory.pk22.noise import check_frequencies
from vitheory.preset import merge

SIDE = 28
GET = "apt-get install dataset-fashion-mnist"  # every refusal says how to get the files


def idx(array: np.ndarray, magic: int | None = None) -> bytes:
    """The idx bytes of a uint8 array: magic 0x800 + ndim, the sizes big-endian, the bytes."""
    head = (0x800 + array.ndim if magic is None else magic).to_bytes(4, "big")
    return head + b"".join(n.to_bytes(4, "big") for n in array.shape) + array.astype(np.uint8).tobytes()


def written_set(folder, *, per_class=(6, 4), gz=True, edit=None, seed=0):
    """Four idx files of random 28 x 28 images, `per_class` (train, test) of each of 10 classes, into
    `folder` (gzipped or not); `edit(name, content) -> content` damages one before it is written. Returns
    the arrays by idx file name and their content's SHA-256, the pins a test reads them against."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    arrays, sums = {}, {}
    for split, count in zip(("train", "t10k"), per_class):
        labels = rng.permutation(np.repeat(np.arange(10), count)).astype(np.uint8)
        arrays[f"{split}-images-idx3-ubyte"] = rng.integers(0, 256, (len(labels), SIDE, SIDE), dtype=np.uint8)
        arrays[f"{split}-labels-idx1-ubyte"] = labels
    for name, array in arrays.items():
        content = idx(array)
        content = edit(name, content) if edit else content
        sums[name] = hashlib.sha256(content).hexdigest()
        path = folder / (f"{name}.gz" if gz else name)
        path.write_bytes(gzip.compress(content, mtime=0) if gz else content)
    return arrays, sums


def refusal(folder, sums=FASHION_MNIST_SHA256) -> str:
    with pytest.raises(DatasetUnavailable) as err:
        read_fashion_mnist(folder, sums)
    message = str(err.value)
    assert "\n" not in message and message.startswith("fashion_mnist: ") and GET in message
    assert "images.fashion_mnist_path" in message
    return message


@pytest.mark.parametrize("gz", [True, False])
def test_a_written_set_reads_back_gzipped_or_not(tmp_path, gz):
    arrays, sums = written_set(tmp_path, gz=gz)
    data = read_fashion_mnist(tmp_path, sums)
    for split, part in (("train", data.train), ("t10k", data.test)):
        count = len(arrays[f"{split}-labels-idx1-ubyte"])
        assert part.X.dtype == torch.uint8 and part.X.shape == (count, SIDE, SIDE, 1)
        assert torch.equal(part.X[..., 0], torch.from_numpy(arrays[f"{split}-images-idx3-ubyte"]))
        assert part.y.dtype == torch.int64 and part.y.tolist() == arrays[f"{split}-labels-idx1-ubyte"].tolist()
    assert data.classes[0] == "T-shirt/top" and data.classes[9] == "Ankle boot" and len(data.classes) == 10


def test_the_official_pins_are_of_the_idx_content_one_per_file():
    assert sorted(FASHION_MNIST_SHA256) == sorted(f"{s}-{k}" for s in ("train", "t10k")
                                                  for k in ("images-idx3-ubyte", "labels-idx1-ubyte"))
    assert all(len(sha) == 64 and int(sha, 16) >= 0 for sha in FASHION_MNIST_SHA256.values())


def test_a_set_that_is_not_the_official_release_is_refused_before_it_is_read(tmp_path):
    written_set(tmp_path)
    message = refusal(tmp_path)  # the official pins, as a user's run reads them
    assert "not the official release's" in message and FASHION_MNIST_SHA256["train-images-idx3-ubyte"] in message


def test_a_missing_file_names_both_forms_and_how_to_get_them(tmp_path):
    _, sums = written_set(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte.gz").unlink()
    message = refusal(tmp_path, sums)
    assert f"{tmp_path / 't10k-labels-idx1-ubyte'}.gz nor {tmp_path / 't10k-labels-idx1-ubyte'} exists" in message
    assert "https://github.com/zalandoresearch/fashion-mnist" in message


def test_a_cut_gzip_is_one_line(tmp_path):
    _, sums = written_set(tmp_path)
    path = tmp_path / "train-images-idx3-ubyte.gz"
    path.write_bytes(path.read_bytes()[:-40])
    assert "is not a whole gzip file" in refusal(tmp_path, sums)


def test_a_wrong_magic_number_is_one_line(tmp_path):
    # the labels' file holding an image header: its own pin passes, the format check does not
    _, sums = written_set(tmp_path, edit=lambda name, c: (0x803).to_bytes(4, "big") + c[4:]
                          if name == "train-labels-idx1-ubyte" else c)
    message = refusal(tmp_path, sums)
    assert "train-labels-idx1-ubyte.gz has magic number 0x00000803, not 0x00000801" in message


def test_a_truncated_idx_file_is_one_line(tmp_path):
    _, sums = written_set(tmp_path, gz=False, edit=lambda name, c: c[:-SIDE] if name == "t10k-images-idx3-ubyte" else c)
    message = refusal(tmp_path, sums)
    expected = 16 + 40 * SIDE * SIDE
    assert (f"t10k-images-idx3-ubyte holds {expected - SIDE} bytes, not the {expected} its header's shape "
            "(40, 28, 28)") in message
    assert "truncated" in message


def test_labels_that_do_not_match_the_images_count_are_one_line(tmp_path):
    # 59 labels for 60 images: each file whole, the pair not one release's
    _, sums = written_set(tmp_path, edit=lambda name, c: idx(np.frombuffer(c[8:-1], np.uint8))
                          if name == "train-labels-idx1-ubyte" else c)
    message = refusal(tmp_path, sums)
    assert "holds 60 images" in message and "59 labels" in message


# --- the prepare_images stage -----------------------------------------------------------------------

# The stage as DVC runs it, in a fresh interpreter, with the pins replaced by the written set's in that
# interpreter alone: the product has no switch (param, variable or file) that lowers its check.
PINNED_RUN = ("import json, runpy, sys; from vitheory.images import datasets; "
              "datasets.FASHION_MNIST_SHA256.update(json.loads(sys.argv.pop(1))); "
              "runpy.run_module('stages.prepare_images', run_name='__main__', alter_sys=True)")
PRESET = yaml.safe_load((ROOT / "presets/fashion_mnist.yaml").read_text())
FASHION = merge(yaml.safe_load((ROOT / "params.yaml").read_text()), PRESET)


def run_stage(project, sums=None):
    env = os.environ | {"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    command = ([sys.executable, "-c", PINNED_RUN, json.dumps(sums)] if sums
               else [sys.executable, "-m", "stages.prepare_images"])
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, check=False)


def test_prepare_images_on_a_written_set_feeds_the_vit_and_a_damaged_one_overwrites_nothing(tmp_path):
    arrays, sums = written_set(tmp_path / "fashion")
    params = merge(FASHION, {"images": {"fashion_mnist_path": str(tmp_path / "fashion"), "val_fraction": 0.25,
                                        "train_fraction": 1.0, "official_test_fraction": 0.5}})
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    run = run_stage(tmp_path, sums)
    assert run.returncode == 0, run.stderr
    folder = tmp_path / artifact("images")
    meta = read_meta(folder)
    assert meta["image_shape"] == [SIDE, SIDE, 1] and meta["official_test_split"] is True
    assert meta["sizes"] == {"train": 40, "val": 20, "test": 20}  # 6 per class less round(1.5) = 2; half of 4
    assert meta["sources"] == [{"file": name, "sha256": sha} for name, sha in sums.items()]
    assert "fashion_mnist_path" not in meta["params"]  # where the files were found: not what they are

    written = {arrays["train-images-idx3-ubyte"][i].tobytes(): arrays["train-labels-idx1-ubyte"][i] for i in range(60)}
    train = load_prepared(folder, "train")
    found = [written.get(image[..., 0].numpy().tobytes()) for image in train.X]
    assert found == train.y.tolist()  # every training image is a written one, with its own label
    data = load_images(folder, ("train", "val", "test"), torch.device("cpu"))
    vit = build_model(parse_params(params).real.models.vit, data.image_size, data.channels, data.n_classes)
    assert vit.n_patches == 49  # the preset's 4 x 4 patches on the 28 x 28 images
    fit(vit, data.x["train"], data.y["train"], parse_params(params).real, epochs=1, seed=0, progress=False)
    assert all(torch.isfinite(p).all() for p in vit.parameters())

    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    refused = run_stage(tmp_path)  # the same set against the official pins
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: fashion_mnist: ")
    assert "not the official release's" in lines[0] and GET in lines[0]
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before


def test_the_official_test_split_is_cut_class_balanced_apart_from_the_training_images(tmp_path):
    arrays, sums = written_set(tmp_path, per_class=(6, 10))
    data = read_fashion_mnist(tmp_path, sums)
    whole = split(data, val_fraction=0.25, test_fraction=0.2, train_fraction=1.0, seed=3)
    cut = split(data, val_fraction=0.25, test_fraction=0.2, train_fraction=1.0, seed=3, official_test_fraction=0.3)
    assert torch.equal(whole["test"].X, data.test.X)
    assert cut["test"].y.bincount().tolist() == [3] * 10
    kept = balanced_subset(data.test.y, 0.3, torch.Generator().manual_seed(3))
    assert torch.equal(cut["test"].X, data.test.X[kept])
    for name in ("train", "val"):
        assert torch.equal(cut[name].X, whole[name].X)


# --- the preset's regime --------------------------------------------------------------------------------

def training_images(per_class: int, images) -> int:
    """Class-balanced counts as split_indices takes them, for 10 classes of `per_class` training images."""
    left = per_class - max(1, round(images.val_fraction * per_class))
    return 10 * max(1, round(images.train_fraction * left))


def test_the_preset_keeps_every_real_image_claims_setting_meaningful_on_28_x_28():
    params = parse_params(FASHION)
    images, vit, positional = params.images, params.real.models.vit, params.real.models.vit_positional
    assert images.dataset == "fashion_mnist" and SIDE % vit.patch == 0 and positional.patch == vit.patch
    tokens = (SIDE // vit.patch) ** 2
    # LI-5: fewer kept tokens than the ViT has, and a marker patch per class among them
    assert max(params.sparsify_real.keep_tokens) < tokens and tokens >= 10
    # JSL-5: the permutation moves squares finer than the ViT's patch, so no patch order undoes it
    assert params.real.permutation_block < vit.patch
    # PK-5: every noise band holds frequencies of a 28 x 28 spectrum (pk22's own check, raising if not)
    check_frequencies(SIDE, params.pk)
    # PK-2: the Hessian's full mini-batches fit the smallest fraction's training images (pk_train.fractions)
    train = training_images(6000, images)
    smallest = 10 * max(1, round(min(params.pk_train.fractions) * train / 10))
    assert params.pk.hessian_batches * params.pk.hessian_batch_size <= smallest
    # the analyses' test images: the whole test split, as on cluttered digits
    assert params.pk.n_images == 10 * round(images.official_test_fraction * 1000)
