"""Stage `prepare_images`: the real dataset named in params (downloaded on first use when it has to
be), split into deterministic, class-balanced train / val / test sets of uint8 images."""

import argparse
from dataclasses import asdict
from pathlib import Path

from vitheory import images
from vitheory.artifacts import atomic_path, write_json, write_tensors
from vitheory.cli import run_stage
from vitheory.params import Params


def main(params: Params, args: argparse.Namespace) -> None:
    cfg = params.images
    dataset = images.load_dataset(cfg.dataset, cfg.root)
    splits = images.split(dataset, val_fraction=cfg.val_fraction, test_fraction=cfg.test_fraction,
                          train_fraction=cfg.train_fraction, seed=cfg.seed)
    with atomic_path(args.out) as tmp:
        for name, part in splits.items():
            write_tensors(Path(tmp) / f"{name}.safetensors", {"X": part.X, "y": part.y})
        write_json(Path(tmp) / "meta.json", {
            "params": asdict(cfg), "classes": list(dataset.classes),
            "image_shape": list(splits["train"].X.shape[1:]),
            "sizes": {name: len(part) for name, part in splits.items()},
            "official_test_split": dataset.test is not None,
            "sources": [{"file": s.filename, "md5": s.md5} for s in images.SOURCES.get(cfg.dataset, ())],
        })


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", help="folder for {train,val,test}.safetensors and meta.json")
    run_stage(main, parser)
