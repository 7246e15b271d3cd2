"""Real image datasets, read from their original distribution formats, and deterministic splits.

`digits` (scikit-learn's 8 x 8 handwritten digits) ships with scikit-learn: no network; the default,
`cluttered_digits`, is built from them (vitheory.images.cluttered). `fashion_mnist` (Zalando Research's
Fashion-MNIST) is read from its four idx files in a local folder (Debian's dataset-fashion-mnist installs
them), each checked against its pinned SHA-256 first.
`cifar10`, `cifar100` (the binary versions: fixed-length records, so nothing is unpickled) and `svhn`
(MATLAB .mat, cropped digits) are downloaded from their official sources into `<root>/<name>/` on
first use and checked against their published MD5. `imagefolder` reads `<root>/imagefolder/<split>/
<class>/*.png|jpg` (ImageNet-style). Every dataset comes back as uint8 images (N, H, W, C) and int64
labels; a missing file offline is one `DatasetUnavailable` line saying where it was expected and how
to provide it.
"""

from __future__ import annotations

import gzip
import hashlib
import tarfile
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
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
DATASETS = ("digits", "fashion_mnist", "cifar10", "cifar100", "svhn", "imagefolder")
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


# Fashion-MNIST (Xiao, Rasul, Vollgraf 2017, arXiv 1708.07747; Zalando SE, MIT license), the official release
# of https://github.com/zalandoresearch/fashion-mnist. The SHA-256 of each idx file's content, gunzipped: the
# gzip wrappers differ (Debian's dataset-fashion-mnist 0.0~git20200523.55506a9-1 drops the file name the home
# page's archives hold, so neither the published MD5 nor a gzip's own sum fits both), the content is one.
FASHION_MNIST_SHA256 = {
    "train-images-idx3-ubyte": "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
    "train-labels-idx1-ubyte": "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
    "t10k-images-idx3-ubyte": "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
    "t10k-labels-idx1-ubyte": "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
}
FASHION_MNIST_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                         "Ankle boot")
FASHION_MNIST_GET = ("install them with `apt-get install dataset-fashion-mnist` (Debian, Ubuntu: into "
                     "/usr/share/datasets/fashion-mnist), or download the four idx files from "
                     "https://github.com/zalandoresearch/fashion-mnist into a folder and set "
                     "images.fashion_mnist_path in params.yaml to it")


def read_idx(data: bytes, dims: int, path: Path) -> np.ndarray:
    """An idx array of unsigned bytes (the MNIST format): magic 0x00000800 + dims, dims big-endian uint32
    sizes, then the bytes, row-major."""
    header = 4 * (1 + dims)
    magic = int.from_bytes(data[:4], "big")
    if magic != 0x800 + dims:
        raise DatasetUnavailable(f"fashion_mnist: {path} has magic number {magic:#010x}, not {0x800 + dims:#010x} "
                                 f"(unsigned bytes, {dims} dimension(s)): not the idx file it is named after; "
                                 f"{FASHION_MNIST_GET}")
    if len(data) < header:
        raise DatasetUnavailable(f"fashion_mnist: {path} holds {len(data)} bytes, fewer than its {header}-byte "
                                 f"header: truncated or damaged; {FASHION_MNIST_GET}")
    shape = tuple(int(n) for n in np.frombuffer(data, ">u4", dims, 4))
    expected = header + int(np.prod(shape))
    if len(data) != expected:
        raise DatasetUnavailable(f"fashion_mnist: {path} holds {len(data)} bytes, not the {expected} its header's "
                                 f"shape {shape} needs: truncated or damaged; {FASHION_MNIST_GET}")
    return np.frombuffer(data, np.uint8, offset=header).reshape(shape)


def read_fashion_mnist(folder: Path, pinned: Mapping[str, str] = FASHION_MNIST_SHA256) -> Dataset:
    """Fashion-MNIST's 60,000 training and 10,000 test images (28 x 28, grey) from `folder`'s four idx
    files, each gzipped (as distributed) or not. Every file is found and its content checked against
    `pinned` (SHA-256 by idx file name) before any is parsed: a missing or damaged one is one line."""
    paths = {}
    for name in pinned:
        found = [p for p in (folder / f"{name}.gz", folder / name) if p.is_file()]
        if not found:
            raise DatasetUnavailable(f"fashion_mnist: neither {folder / name}.gz nor {folder / name} exists: "
                                     f"{FASHION_MNIST_GET}")
        paths[name] = found[0]
    contents = {}
    for name, path in paths.items():
        try:
            contents[name] = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        except (OSError, EOFError) as err:  # gzip.BadGzipFile is an OSError
            raise DatasetUnavailable(f"fashion_mnist: {path} is not a whole gzip file ({err}); "
                                     f"{FASHION_MNIST_GET}") from None
        found = hashlib.sha256(contents[name]).hexdigest()
        if found != pinned[name]:
            raise DatasetUnavailable(f"fashion_mnist: {path} holds data of SHA-256 {found}, not the official "
                                     f"release's {pinned[name]}: damaged or another file; {FASHION_MNIST_GET}")

    def read(split: str) -> Images:
        images = read_idx(contents[f"{split}-images-idx3-ubyte"], 3, paths[f"{split}-images-idx3-ubyte"])
        labels = read_idx(contents[f"{split}-labels-idx1-ubyte"], 1, paths[f"{split}-labels-idx1-ubyte"])
        if len(images) != len(labels):
            raise DatasetUnavailable(f"fashion_mnist: {paths[f'{split}-images-idx3-ubyte']} holds {len(images)} "
                                     f"images, {paths[f'{split}-labels-idx1-ubyte']} {len(labels)} labels: not one "
                                     f"release's pair; {FASHION_MNIST_GET}")
        return Images(torch.from_numpy(images[..., None].copy()), torch.from_numpy(labels.astype(np.int64)))

    return Dataset(read("train"), read("t10k"), FASHION_MNIST_CLASSES)


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
          seed: int, official_test_fraction: float = 1.0) -> dict[str, Images]:
    """Deterministic train / val / test splits, class-balanced: a class-balanced `official_test_fraction`
    of the official test split when there is one (else `test_fraction` of each class), `val_fraction`
    of each class of the rest, and of the remaining training images a class-balanced `train_fraction`."""
    index = split_indices(dataset.train.y, val_fraction=val_fraction, train_fraction=train_fraction, seed=seed,
                          test_fraction=test_fraction if dataset.test is None else None)
    splits = {name: dataset.train.subset(index[name]) for name in ("train", "val")}
    if dataset.test is None:
        return splits | {"test": dataset.train.subset(index["test"])}
    if official_test_fraction == 1:
        return splits | {"test": dataset.test}
    # a generator of its own: the training and validation images do not depend on this share
    kept = balanced_subset(dataset.test.y, official_test_fraction, torch.Generator().manual_seed(seed))
    return splits | {"test": dataset.test.subset(kept)}


def _complement(index: torch.Tensor, n: int) -> torch.Tensor:
    keep = torch.ones(n, dtype=torch.bool)
    keep[index] = False
    return keep.nonzero().squeeze(1)


def load_prepared(folder: str | Path, split_name: str) -> Images:
    """A split written by the prepare_images stage (vitheory.images.prepare)."""
    tensors = read_split(folder, split_name, ("X", "y"))
    return Images(tensors["X"], tensors["y"])
