"""Dataset loaders on tiny files written in each original format, the offline error, and the splits."""

import io
import os
import subprocess
import sys
import tarfile

import numpy as np
import pytest
import torch
import yaml
from conftest import ROOT
from PIL import Image

from vitheory.core.paths import artifact
from vitheory.images import datasets as images
from vitheory.images.datasets import DatasetUnavailable, Source

UNREACHABLE = "http://127.0.0.1:9/missing"  # nothing listens on the discard port: fails at once


def cifar_records(labels: list[list[int]], rng: np.random.Generator) -> tuple[bytes, np.ndarray]:
    """Records of label bytes + 3072 pixel bytes, and the (N, 32, 32, 3) images they encode."""
    pixels = rng.integers(0, 256, (len(labels), 3, 32, 32), dtype=np.uint8)
    data = b"".join(bytes(label) + pixels[i].tobytes() for i, label in enumerate(labels))
    return data, pixels.transpose(0, 2, 3, 1)


def write_tar(path, members: dict[str, bytes], folder: str) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(f"{folder}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def sources_for(name: str, path) -> dict[str, tuple[Source, ...]]:
    return {name: (Source(UNREACHABLE, path.name, images.md5(path)),)}


def test_cifar10_binary_archive(tmp_path):
    rng = np.random.default_rng(0)
    members, expected = {}, []
    for i in range(1, 6):
        members[f"data_batch_{i}.bin"], pixels = cifar_records([[i], [9 - i]], rng)
        expected.append(pixels)
    members["test_batch.bin"], test_pixels = cifar_records([[3]], rng)
    members["batches.meta.txt"] = b"airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n\n"
    archive = tmp_path / "cifar10" / "cifar-10-binary.tar.gz"
    archive.parent.mkdir()
    write_tar(archive, members, "cifar-10-batches-bin")
    data = images.load_dataset("cifar10", tmp_path, sources_for("cifar10", archive))
    assert data.train.X.shape == (10, 32, 32, 3) and data.train.X.dtype == torch.uint8
    assert torch.equal(data.train.X, torch.from_numpy(np.concatenate(expected)))  # channel planes -> HWC
    assert data.train.y.tolist() == [1, 8, 2, 7, 3, 6, 4, 5, 5, 4]
    assert torch.equal(data.test.X, torch.from_numpy(test_pixels)) and data.test.y.tolist() == [3]
    assert data.classes[0] == "airplane" and len(data.classes) == 10


def test_cifar100_binary_archive_uses_fine_labels(tmp_path):
    rng = np.random.default_rng(1)
    train, _ = cifar_records([[0, 42], [19, 99]], rng)  # (coarse, fine)
    test, _ = cifar_records([[3, 7]], rng)
    archive = tmp_path / "cifar100" / "cifar-100-binary.tar.gz"
    archive.parent.mkdir()
    names = "\n".join(f"class_{i}" for i in range(100)).encode()
    write_tar(archive, {"train.bin": train, "test.bin": test, "fine_label_names.txt": names}, "cifar-100-binary")
    data = images.load_dataset("cifar100", tmp_path, sources_for("cifar100", archive))
    assert data.train.y.tolist() == [42, 99] and data.test.y.tolist() == [7]
    assert len(data.classes) == 100


def test_svhn_mat_files_map_label_10_to_digit_0(tmp_path):
    from scipy.io import savemat

    rng = np.random.default_rng(2)
    folder = tmp_path / "svhn"
    folder.mkdir()
    pixels = {}
    for split, labels in (("train", [10, 1, 5]), ("test", [2, 10])):
        pixels[split] = rng.integers(0, 256, (32, 32, 3, len(labels)), dtype=np.uint8)
        savemat(folder / f"{split}_32x32.mat", {"X": pixels[split], "y": np.array(labels)[:, None]})
    sources = {"svhn": tuple(Source(UNREACHABLE, f"{s}_32x32.mat", images.md5(folder / f"{s}_32x32.mat"))
                             for s in ("train", "test"))}
    data = images.load_dataset("svhn", tmp_path, sources)
    assert data.train.y.tolist() == [0, 1, 5] and data.test.y.tolist() == [2, 0]
    assert torch.equal(data.train.X[1], torch.from_numpy(pixels["train"][..., 1]))


def test_image_folder_of_pngs(tmp_path):
    rng = np.random.default_rng(3)
    for split, counts in (("train", {"cat": 2, "dog": 3}), ("test", {"cat": 1, "dog": 1})):
        for name, count in counts.items():
            (tmp_path / "imagefolder" / split / name).mkdir(parents=True)
            for i in range(count):
                Image.fromarray(rng.integers(0, 256, (6, 6, 3), dtype=np.uint8)).save(
                    tmp_path / "imagefolder" / split / name / f"{i}.png")
    data = images.load_dataset("imagefolder", tmp_path)
    assert data.classes == ("cat", "dog")
    assert data.train.X.shape == (5, 6, 6, 3) and data.train.y.tolist() == [0, 0, 1, 1, 1]
    assert data.test.y.tolist() == [0, 1]
    with Image.open(tmp_path / "imagefolder/train/dog/2.png") as image:
        assert torch.equal(data.train.X[4], torch.from_numpy(np.array(image)))


def test_absent_and_offline_names_the_dataset_the_place_and_the_source(tmp_path):
    with pytest.raises(DatasetUnavailable) as err:
        images.load_dataset("cifar10", tmp_path,
                            {"cifar10": (Source(UNREACHABLE, "cifar-10-binary.tar.gz", "0" * 32),)})
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("cifar10: ")
    assert str(tmp_path / "cifar10" / "cifar-10-binary.tar.gz") in message and UNREACHABLE in message
    assert not list((tmp_path / "cifar10").iterdir())  # no partial download left behind


def test_a_file_with_the_wrong_checksum_is_refused(tmp_path):
    (tmp_path / "svhn").mkdir()
    (tmp_path / "svhn" / "train_32x32.mat").write_bytes(b"not the official file")
    with pytest.raises(DatasetUnavailable, match="not the published"):
        images.load_dataset("svhn", tmp_path)


def test_prepare_images_stage_offline_exits_2_with_one_line(tmp_path):
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["images"] |= {"dataset": "svhn", "root": str(tmp_path / "raw")}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    # every download goes through a proxy that refuses connections: offline, whatever the machine
    env = {k: v for k, v in os.environ.items() if k.lower() != "no_proxy"}
    env |= {"PYTHONPATH": str(ROOT), "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9"}
    run = subprocess.run([sys.executable, "-m", "stages.prepare_images"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=False)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: svhn: ")
    assert "train_32x32.mat" in lines[0]
    assert not (tmp_path / artifact("images")).exists()


def test_digits_ship_with_scikit_learn():
    data = images.load_dataset("digits", "unused")
    assert data.train.X.shape == (1797, 8, 8, 1) and data.test is None
    assert data.train.X.max() == 255 and data.train.X.dtype == torch.uint8


def test_splits_are_deterministic_disjoint_and_class_balanced():
    data = images.load_dataset("digits", "unused")
    first = images.split(data, val_fraction=0.1, test_fraction=0.2, train_fraction=0.5, seed=0)
    again = images.split(data, val_fraction=0.1, test_fraction=0.2, train_fraction=0.5, seed=0)
    assert all(torch.equal(first[s].X, again[s].X) for s in first)
    rows = {s: {tuple(x.flatten().tolist()) + (int(y),) for x, y in zip(first[s].X, first[s].y)} for s in first}
    assert not rows["train"] & rows["test"] and not rows["val"] & rows["test"]
    for part, share in (("test", 0.2), ("train", 0.5 * 0.9 * 0.8)):
        counts = torch.bincount(first[part].y, minlength=10).float()
        expected = torch.bincount(data.train.y, minlength=10).float() * share
        assert (counts - expected).abs().max() <= 1.5
    other = images.split(data, val_fraction=0.1, test_fraction=0.2, train_fraction=0.5, seed=1)
    assert not torch.equal(first["test"].X, other["test"].X)
