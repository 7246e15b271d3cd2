"""Real image datasets, read from their original distribution formats, and deterministic splits.

`digits` (scikit-learn's 8 x 8 handwritten digits) ships with scikit-learn: no network; the default,
`cluttered_digits`, is built from them (vitheory.images.cluttered).
`cifar10`, `cifar100` (the binary versions: fixed-length records, so nothing is unpickled) and `svhn`
(MATLAB .mat, cropped digits) are downloaded from their official sources into `<root>/<name>/` on
first use and checked against their published MD5. `imagefolder` reads `<root>/imagefolder/<split>/
<class>/*.png|jpg` (ImageNet-style). Every dataset comes back as uint8 images (N, H, W, C) and int64
labels; a missing file offline is one `DatasetUnavailable` line saying where it was expected and how
to provide it.
"""

from __future__ import annotations

import hashlib
import tarfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from vitheory.core.artifacts import read_split
from vitheory.core.errors import VitheoryError


class DatasetUnavailable(VitheoryError):
    """A dataset's files are absent and could not be fetched, or do not match their checksum."""


@dataclass(frozen=True)
class Source:
    """One file of a dataset's official distribution."""

    url: str
    filename: str
    md5: str


SOURCES: dict[str, tuple[Source, ...]] = {
    # https://www.cs.toronto.edu/~kriz/cifar.html (binary versions, MD5 as published there)
    "cifar10": (Source("https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz", "cifar-10-binary.tar.gz",
                       "c32a1d4ab5d03f1284b67883e8d87530"),),
    "cifar100": (Source("https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz", "cifar-100-binary.tar.gz",
                        "03b5dce01913d631647c71ecec9e9cb8"),),
    # http://ufldl.stanford.edu/housenumbers/ (format 2, cropped digits)
    "svhn": (Source("http://ufldl.stanford.edu/housenumbers/train_32x32.mat", "train_32x32.mat",
                    "e26dedcc434d2e4c54c9b2d4a06d8373"),
             Source("http://ufldl.stanford.edu/housenumbers/test_32x32.mat", "test_32x32.mat",
                    "eb5a983be6a315427106f1b164d9cef3")),
}
DATASETS = ("digits", "cifar10", "cifar100", "svhn", "imagefolder")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


@dataclass(frozen=True)
class Images:
    """X (N, H, W, C) uint8; y (N,) int64 class indices."""

    X: torch.Tensor
    y: torch.Tensor

    def __len__(self) -> int:
        return len(self.y)

    def subset(self, index: torch.Tensor) -> Images:
        return Images(self.X[index], self.y[index])


@dataclass(frozen=True)
class Dataset:
    """A dataset's official splits (`test` is None when it has none) and its class names."""

    train: Images
    test: Images | None
    classes: tuple[str, ...]


def md5(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "md5").hexdigest()


def fetch(name: str, root: Path, sources: Sequence[Source]) -> list[Path]:
    """The dataset's files under `root/name/`, downloaded when absent, each checked against its MD5."""
    folder = root / name
    paths = []
    for source in sources:
        path = folder / source.filename
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f".{path.name}.part")
            try:
                with urllib.request.urlopen(source.url, timeout=30) as response, open(partial, "wb") as out:
                    while block := response.read(1 << 20):
                        out.write(block)
            except (urllib.error.URLError, OSError) as err:
                partial.unlink(missing_ok=True)
                raise DatasetUnavailable(
                    f"{name}: {path} is missing and could not be downloaded ({getattr(err, 'reason', err)}): "
                    f"download {source.url} into {folder}/ (MD5 {source.md5}) and rerun") from None
            partial.rename(path)
        found = md5(path)
        if found != source.md5:
            raise DatasetUnavailable(f"{name}: {path} has MD5 {found}, not the published {source.md5}: "
                                     f"delete it and rerun to download it again, or replace it with the official file")
        paths.append(path)
    return paths


def _cifar_records(data: bytes, label_bytes: int, label_index: int, path: str) -> Images:
    """Fixed-length binary records: label byte(s), then 1024 red, 1024 green, 1024 blue pixels."""
    size = label_bytes + 3072
    if len(data) % size:
        raise DatasetUnavailable(f"{path}: {len(data)} bytes is not a whole number of {size}-byte CIFAR records")
    records = np.frombuffer(data, dtype=np.uint8).reshape(-1, size)
    images = records[:, label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return Images(torch.from_numpy(images.copy()), torch.from_numpy(records[:, label_index].astype(np.int64)))


def _concat(parts: Sequence[Images]) -> Images:
    return Images(torch.cat([p.X for p in parts]), torch.cat([p.y for p in parts]))


def read_cifar(archive: Path, fine: bool) -> Dataset:
    """CIFAR-10 (`fine` False) or CIFAR-100 (fine labels) from the binary tar.gz, read in memory."""
    with tarfile.open(archive, "r:gz") as tar:
        members = {Path(m.name).name: m for m in tar.getmembers() if m.isfile()}

        def read(name: str) -> bytes:
            if name not in members:
                raise DatasetUnavailable(f"{archive}: no member {name}; is it the official binary version?")
            return tar.extractfile(members[name]).read()

        if fine:
            train = _cifar_records(read("train.bin"), 2, 1, f"{archive}:train.bin")
            test = _cifar_records(read("test.bin"), 2, 1, f"{archive}:test.bin")
            names = read("fine_label_names.txt")
        else:
            train = _concat([_cifar_records(read(f"data_batch_{i}.bin"), 1, 0, f"{archive}:data_batch_{i}.bin")
                             for i in range(1, 6)])
            test = _cifar_records(read("test_batch.bin"), 1, 0, f"{archive}:test_batch.bin")
            names = read("batches.meta.txt")
    return Dataset(train, test, tuple(n for n in names.decode().split() if n))


def read_svhn(train_path: Path, test_path: Path) -> Dataset:
    """SVHN cropped digits: .mat files with X (32, 32, 3, N) and y (N, 1) in 1..10, 10 meaning digit 0."""
    from scipy.io import loadmat  # noqa: PLC0415 - scipy's io is slow to import; only SVHN needs it

    def read(path: Path) -> Images:
        try:
            mat = loadmat(path)
        except (ValueError, OSError) as err:
            raise DatasetUnavailable(f"{path}: not a readable .mat file ({err})") from None
        images = np.ascontiguousarray(mat["X"].transpose(3, 0, 1, 2))
        labels = mat["y"].reshape(-1).astype(np.int64) % 10
        return Images(torch.from_numpy(images), torch.from_numpy(labels))

    return Dataset(read(train_path), read(test_path), tuple(str(d) for d in range(10)))


def read_imagefolder(folder: Path) -> Dataset:
    """`folder/train/<class>/*` and, when present, `folder/test/<class>/*`; classes sorted by name, every
    image converted to RGB and all of one size."""
    from PIL import Image  # noqa: PLC0415 - only this dataset decodes image files

    if not (folder / "train").is_dir():
        raise DatasetUnavailable(f"imagefolder: {folder / 'train'} is not a folder: put one sub-folder per class "
                                 f"of images there (and optionally {folder / 'test'})")
    classes = tuple(sorted(p.name for p in (folder / "train").iterdir() if p.is_dir()))

    def read(split: Path) -> Images:
        images, labels = [], []
        for label, name in enumerate(classes):
            for path in sorted((split / name).iterdir()) if (split / name).is_dir() else []:
                if path.suffix.lower() in IMAGE_SUFFIXES:
                    with Image.open(path) as image:
                        images.append(np.asarray(image.convert("RGB")))
                    labels.append(label)
        shapes = {a.shape for a in images}
        if len(shapes) != 1:
            raise DatasetUnavailable(f"imagefolder: {split} holds images of sizes {sorted(shapes)}: "
                                     f"resize them to one size")
        return Images(torch.from_numpy(np.stack(images)), torch.tensor(labels, dtype=torch.int64))

    test = read(folder / "test") if (folder / "test").is_dir() else None
    return Dataset(read(folder / "train"), test, classes)


def read_digits() -> Dataset:
    """scikit-learn's digits: 1,797 images of 8 x 8 pixels in 0..16, scaled to 0..255; no test split."""
    from sklearn.datasets import load_digits  # noqa: PLC0415 - scikit-learn is slow to import

    digits = load_digits()
    pixels = np.rint(digits.images * (255 / 16)).astype(np.uint8)[..., None]
    return Dataset(Images(torch.from_numpy(pixels), torch.from_numpy(digits.target.astype(np.int64))), None,
                   tuple(str(d) for d in range(10)))


def load_dataset(name: str, root: str | Path, sources: dict[str, tuple[Source, ...]] = SOURCES) -> Dataset:
    """The named dataset; downloads into `root/name/` when needed (see `fetch`)."""
    root = Path(root)
    if name == "digits":
        return read_digits()
    if name == "imagefolder":
        return read_imagefolder(root / "imagefolder")
    paths = fetch(name, root, sources[name])
    if name == "svhn":
        return read_svhn(*paths)
    return read_cifar(paths[0], fine=name == "cifar100")


def balanced_subset(labels: torch.Tensor, fraction: float, generator: torch.Generator) -> torch.Tensor:
    """Sorted indices of round(fraction x n_c) random examples of every class c (at least one each)."""
    chosen = []
    for c in labels.unique().tolist():
        members = (labels == c).nonzero().squeeze(1)
        keep = max(1, round(fraction * len(members)))
        chosen.append(members[torch.randperm(len(members), generator=generator)[:keep]])
    return torch.cat(chosen).sort().values


def split_indices(labels: torch.Tensor, *, val_fraction: float, test_fraction: float | None,
                  train_fraction: float, seed: int) -> dict[str, torch.Tensor]:
    """Deterministic class-balanced train / val / test indices into `labels`: `test_fraction` of each
    class for the test split (None: the dataset has an official one, and "test" is left out),
    `val_fraction` of each class of the rest, and of the remaining a class-balanced `train_fraction`."""
    generator = torch.Generator().manual_seed(seed)
    pool = torch.arange(len(labels))
    found = {}
    if test_fraction is not None:
        test = balanced_subset(labels, test_fraction, generator)
        found["test"], pool = test, _complement(test, len(labels))
    val = balanced_subset(labels[pool], val_fraction, generator)
    found["val"], train = pool[val], pool[_complement(val, len(pool))]
    found["train"] = train[balanced_subset(labels[train], train_fraction, generator)]
    return found


def split(dataset: Dataset, *, val_fraction: float, test_fraction: float, train_fraction: float,
          seed: int) -> dict[str, Images]:
    """Deterministic train / val / test splits, class-balanced: the official test split when there is
    one (else `test_fraction` of each class), `val_fraction` of each class of the rest, and of the
    remaining training images a class-balanced `train_fraction`."""
    index = split_indices(dataset.train.y, val_fraction=val_fraction, train_fraction=train_fraction, seed=seed,
                          test_fraction=test_fraction if dataset.test is None else None)
    splits = {name: dataset.train.subset(index[name]) for name in ("train", "val")}
    return splits | {"test": dataset.train.subset(index["test"]) if dataset.test is None else dataset.test}


def _complement(index: torch.Tensor, n: int) -> torch.Tensor:
    keep = torch.ones(n, dtype=torch.bool)
    keep[index] = False
    return keep.nonzero().squeeze(1)


def load_prepared(folder: str | Path, split_name: str) -> Images:
    """A split written by the prepare_images stage (vitheory.images.prepare)."""
    tensors = read_split(folder, split_name, ("X", "y"))
    return Images(tensors["X"], tensors["y"])
