"""Probe: what a cluttered-digits regime costs and whether a model learns in it, before a pipeline run.

    python -m benchmarks.cluttered_regime [--model vit|vit_positional|cnn] [--epochs 40]
        [--canvas 16 --scale 1 --fragments 4 --fragment 3 --jitter 0] [--set key=value ...]

Trains one seed of a `train_real` model, with params.yaml's recipe (then any `--set`, e.g.
`--set real.lr=0.001 --set real.models.vit.width=32`), on one thread, as a pipeline worker does, on cluttered digits built from the regime given. Prints the training and test
accuracy every 5 epochs and the seconds the training took, so that a regime can be judged (does the
ViT leave chance? is the CNN at ceiling?) and its cost read off.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch
import yaml

from vitheory.core.config import set_value_at
from vitheory.core.device import seeded
from vitheory.images.prepare import prepare
from vitheory.images.training import build_model, evaluate, fit, load_images
from vitheory.params import DEFAULT_PATH, parse_params
from vitheory.preset import merge


def dotted(assignment: str) -> dict:
    """`a.b.c=value` -> {"a": {"b": {"c": value}}}, the value read as YAML."""
    key, _, value = assignment.partition("=")
    tree: dict = {}
    set_value_at(tree, key, yaml.safe_load(value))
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=["vit", "vit_positional", "cnn"], default="vit")
    parser.add_argument("--epochs", type=int, default=40)
    for knob in ("canvas", "scale", "fragments", "fragment", "jitter"):
        parser.add_argument(f"--{knob}", type=int)
    parser.add_argument("--set", action="append", default=[], help="key=value, merged last")
    args = parser.parse_args()
    raw = yaml.safe_load(DEFAULT_PATH.read_text())
    regime = {k: getattr(args, k) for k in ("canvas", "scale", "fragments", "fragment", "jitter")
              if getattr(args, k) is not None}
    raw = merge(raw, {"images": {"cluttered": regime}, "real": {"epochs": args.epochs}})
    for assignment in args.set:
        raw = merge(raw, dotted(assignment))
    params = parse_params(raw)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        prepare(params.images, Path(folder) / "images")
        data = load_images(Path(folder) / "images", ("train", "test"), torch.device("cpu"))
    cfg = params.real
    model = seeded(0, lambda: build_model(getattr(cfg.models, args.model), data.image_size, data.channels,
                                          data.n_classes))
    curve = []

    def every_five(epoch: int) -> dict[str, float]:
        if epoch % 5 == 0 or epoch == cfg.epochs:
            curve.append((epoch, evaluate(model, data.x["train"], data.y["train"])["accuracy"],
                          evaluate(model, data.x["test"], data.y["test"])["accuracy"]))
        return {}

    start = time.perf_counter()
    fit(model, data.x["train"], data.y["train"], cfg, epochs=cfg.epochs, seed=0, on_epoch=every_five, progress=False)
    seconds = time.perf_counter() - start
    print(f"{args.model} on cluttered digits {params.images.cluttered}, {len(data.y['train'])} training images, "
          f"{cfg.epochs} epochs, one thread: {seconds:.0f} s (the evaluations included)")
    for epoch, train, test in curve:
        print(f"  epoch {epoch:3d}: train accuracy {train:.3f}, test accuracy {test:.3f}")


if __name__ == "__main__":
    main()
