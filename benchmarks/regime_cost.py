"""What the default real-image regime costs, and what would cut it at equal results, side by side.

    python -m benchmarks.regime_cost [--epochs 40] [--variants baseline,each_epoch,deeper,batch128]

Trains one seed of `train_real`'s ViT per variant with params.yaml's recipe on params.yaml's images, in
single-thread worker processes two at a time (as the pipeline's workers train), and prints for each:
seconds, test accuracy, the time ratio to the baseline, and the [PK22] PK-3/PK-4 block profile (the
mean change of high-frequency log amplitude and of feature-map variance across the MSA and the MLP
blocks, with the share of blocks of the claimed sign: MSA lowers both, MLP raises both). Variants:

  baseline     params.yaml's ViT and recipe (held-out evaluations every real.eval_every epochs)
  each_epoch   the same training, evaluated on the held-out splits after every epoch
  deeper       a deeper, narrower ViT of about the same cost (--deeper depth,width)
  batch128     twice the batch at sqrt(2) times the learning rate (Adam's usual scaling)

The variants run in the order given on two worker processes: the first two start side by side, and each
of the others starts when a worker frees.

It also prints how many trainings the pipeline runs with one CNN shared by train_real and pk_train
(AlterNet's CNN of the same shape is train_real's CNN) against separate ones.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

import torch

from vitheory.core.device import seeded
from vitheory.core.processes import worker_pool
from vitheory.images.params import RealTrainParams
from vitheory.images.prepare import prepare
from vitheory.images.training import LoadedImages, build_model, evaluate, fit, load_images
from vitheory.params import load_params
from vitheory.pk22.feature_maps import block_changes, block_profile


def variant_recipe(name: str, real: RealTrainParams, deeper: tuple[int, int]) -> RealTrainParams:
    vit = real.models.vit
    if name == "deeper":
        depth, width = deeper
        return replace(real, models=replace(real.models, vit=replace(vit, depth=depth, width=width)))
    if name == "batch128":
        return replace(real, batch_size=2 * real.batch_size, lr=real.lr * math.sqrt(2))
    if name == "each_epoch":
        return replace(real, eval_every=1)
    return real


def train_variant(name: str, real: RealTrainParams, data: LoadedImages) -> dict:
    """One seed (0) of the ViT of `real`, on one thread; seconds include the held-out evaluations that
    train_real logs (every `real.eval_every` epochs and after the last)."""
    torch.set_num_threads(1)
    model = seeded(0, partial(build_model, real.models.vit, data.image_size, data.channels, data.n_classes))

    def log_held_out(epoch: int) -> dict[str, float]:
        if epoch % real.eval_every and epoch != real.epochs:
            return {}
        return {split: evaluate(model, data.x[split], data.y[split])["accuracy"] for split in ("val", "test")}

    start = time.perf_counter()
    fit(model, data.x["train"], data.y["train"], real, epochs=real.epochs, seed=0, progress=False,
        on_epoch=log_held_out)
    seconds = time.perf_counter() - start
    profile = block_profile(model, data.x["test"])
    shape = {quantity: block_changes(profile, quantity) for quantity in ("high_frequency", "variance")}
    return {"name": name, "seconds": seconds, "test": evaluate(model, data.x["test"], data.y["test"])["accuracy"],
            "parameters": sum(p.numel() for p in model.parameters()), "depth": real.models.vit.depth,
            "width": real.models.vit.width, "profile": shape}


def training_counts(params) -> tuple[int, int]:
    """Trainings of train_real + pk_train (seeds included) with one shared CNN, and with pk_train training
    its own CNN of AlterNet's shape on every fraction and all the data, as before the sharing."""
    seeds, fractions = params.real.seeds, len(params.pk_train.fractions)
    train_real = 3 * 2 * seeds  # three models on natural and permuted pixels
    shared = train_real + seeds * (2 * fractions + (fractions + 1) + 1)  # ViT and CNN fractions, AlterNet, GAP ViT
    return shared, shared + seeds * (fractions + 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, help="instead of real.epochs")
    parser.add_argument("--variants", default="baseline,each_epoch,deeper,batch128")
    parser.add_argument("--deeper", default="4,48", help="depth,width of the deeper ViT")
    args = parser.parse_args()
    params = load_params()
    real = params.real if args.epochs is None else replace(params.real, epochs=args.epochs)
    deeper = tuple(int(v) for v in args.deeper.split(","))
    names = args.variants.split(",")
    with tempfile.TemporaryDirectory() as folder:
        prepare(params.images, Path(folder) / "images")
        data = load_images(Path(folder) / "images", ("train", "val", "test"), torch.device("cpu"))
    with worker_pool(2) as pool:
        results = list(pool.map(train_variant, names, [variant_recipe(n, real, deeper) for n in names],
                                [data] * len(names)))
    base = next((r["seconds"] for r in results if r["name"] == "baseline"), None)
    print(f"ViT on {params.images.dataset}, {len(data.y['train'])} training images, {real.epochs} epochs, one "
          "thread per training, two side by side")
    for r in results:
        ratio = f"{r['seconds'] / base:.2f}x the baseline's time" if base else ""
        print(f"{r['name']:12s} depth {r['depth']} width {r['width']} ({r['parameters']:,} parameters): "
              f"{r['seconds']:.0f} s {ratio}, test accuracy {r['test']:.3f}")
        for quantity, changes in r["profile"].items():
            for kind, sign in (("msa", -1), ("mlp", 1)):
                values = changes.get(kind, [])
                share = statistics.mean(v * sign > 0 for v in values)
                print(f"    {quantity:14s} {kind}: mean change {statistics.mean(values):+.4f} over {len(values)} "
                      f"blocks, {share:.2f} of them of the claimed sign")
    shared, separate = training_counts(params)
    print(f"trainings of train_real and pk_train: {shared} with one CNN shared, {separate} with a separate CNN of "
          f"AlterNet's shape ({shared / separate:.2f}x)")


if __name__ == "__main__":
    main()
