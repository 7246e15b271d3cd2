"""The prepare_images stage's work: the dataset params name, read (datasets.py) or built
(cluttered.py), split and written. Kept apart from the readers so that they import no orchestration
and neither imports the other's caller."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from vitheory.core.artifacts import write_splits
from vitheory.images.cluttered import cluttered_splits
from vitheory.images.datasets import (
    FASHION_MNIST_SHA256,
    SOURCES,
    Images,
    load_dataset,
    read_digits,
    read_fashion_mnist,
    split,
)
from vitheory.images.params import ImagesParams


def prepare(cfg: ImagesParams, folder: str | Path) -> None:
    """The dataset `cfg` names (downloaded on first use when it has to be, read from a local folder:
    fashion_mnist, or built: cluttered_digits), split, into `folder` as uint8 images with a meta.json."""
    if cfg.dataset == "cluttered_digits":
        dataset = read_digits()
        tensors = cluttered_splits(dataset.train, cfg)
        splits = {name: Images(t["X"], t["y"]) for name, t in tensors.items()}
    else:
        dataset = (read_fashion_mnist(Path(cfg.fashion_mnist_path)) if cfg.dataset == "fashion_mnist"
                   else load_dataset(cfg.dataset, cfg.root))
        splits = split(dataset, val_fraction=cfg.val_fraction, test_fraction=cfg.test_fraction,
                       train_fraction=cfg.train_fraction, seed=cfg.seed,
                       official_test_fraction=cfg.official_test_fraction)
        tensors = {name: {"X": part.X, "y": part.y} for name, part in splits.items()}
    # where Fashion-MNIST's files were found is no part of what they hold (their sums, below, are): the same
    # files in another folder give the same bytes
    recorded = {key: value for key, value in asdict(cfg).items() if key != "fashion_mnist_path"}
    write_splits(folder, tensors, {
        "params": recorded, "classes": list(dataset.classes),
        "image_shape": list(splits["train"].X.shape[1:]),
        "sizes": {name: len(part) for name, part in splits.items()},
        "official_test_split": dataset.test is not None,
        "cluttered": asdict(cfg.cluttered) if cfg.dataset == "cluttered_digits" else None,
        "sources": ([{"file": name, "sha256": sha} for name, sha in FASHION_MNIST_SHA256.items()]
                    if cfg.dataset == "fashion_mnist" else
                    [{"file": s.filename, "md5": s.md5} for s in SOURCES.get(cfg.dataset, ())]),
    })
