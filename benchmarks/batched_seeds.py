"""Benchmark: the seeds of one image training as one batched model (vitheory.images.batched), against
run_task's one seed at a time, on whatever device is present (CUDA when there is one).

    python -m benchmarks.batched_seeds [--model vit|vit_positional|cnn|alternet] [--seeds 1 8 32 64]
                                       [--epochs 1] [--preset presets/quick.yaml] [--quick]

Trains `--seeds` seeds at once with the params' recipe and model preset (a `--preset` merged in), on
images prepared into a temporary folder, and prints trainings per second for each seed count, beside
the load average (os.getloadavg(): on a shared machine a loaded line is not a measurement); the
one-seed-at-a-time line is run_task's, the path run_tasks takes on a GPU without the batch. An
untimed one-seed training first pays the one-time costs (CUDA context, kernel selection). On a CPU
both run on one thread, as run_task does. `--quick`: the quick preset's digits, 256 training images,
seeds 1, 2 and 4, one epoch: under a minute on a CPU.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

import torch
import yaml

from vitheory.core.device import resolve_device
from vitheory.images.batched import train_batched
from vitheory.images.params import CompileParams
from vitheory.images.prepare import prepare
from vitheory.images.recipe import FitTask
from vitheory.images.training import build_model, load_images, run_task
from vitheory.params import DEFAULT_PATH, parse_params
from vitheory.pk22.trainings import build_alternet
from vitheory.preset import PRESETS, merge


def timed(train: Callable[[], object]) -> float:
    """Seconds `train` takes; its results are copied to the CPU, so a GPU has finished."""
    start = time.perf_counter()
    train()
    return time.perf_counter() - start


def load() -> str:
    return "load average " + " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=["vit", "vit_positional", "cnn", "alternet"], default="vit")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--images", type=int, help="train on the first this many training images only")
    parser.add_argument("--preset", type=Path, help="a preset merged into params.yaml first")
    parser.add_argument("--quick", action="store_true", help="the quick preset, 256 images, seeds 1 2 4")
    args = parser.parse_args()
    if args.quick:
        args.preset, args.images, args.seeds = PRESETS / "quick.yaml", args.images or 256, [1, 2, 4]
    raw = yaml.safe_load(DEFAULT_PATH.read_text())
    params = parse_params(merge(raw, yaml.safe_load(args.preset.read_text())) if args.preset else raw)
    device = resolve_device("auto")
    with tempfile.TemporaryDirectory() as folder:
        prepare(params.images, Path(folder) / "images")
        data = load_images(Path(folder) / "images", ("train",), torch.device("cpu"))
    x, y = data.x["train"][:args.images], data.y["train"][:args.images]
    shape = (data.image_size, data.channels, data.n_classes)
    build = (partial(build_alternet, params.pk_train.alternet, *shape) if args.model == "alternet"
             else partial(build_model, getattr(params.real.models, args.model), *shape))
    cfg = replace(params.real, compile_by_kind=CompileParams.every_kind(False))
    torch.set_num_threads(1)  # as run_task trains (it sets one thread): both lines alike on a CPU

    def tasks(seeds: int) -> list[FitTask]:
        return [FitTask(build, cfg, x, y, args.epochs, seed, {}) for seed in range(seeds)]

    print(f"{args.model} on {params.images.dataset}: {len(y)} training images of {data.image_size} x {data.image_size}, "
          f"batch {cfg.batch_size}, {args.epochs} epoch(s) per training, on {device.type}"
          f"{' (' + torch.cuda.get_device_name() + ')' if device.type == 'cuda' else ', one thread'}")
    train_batched(tasks(1), device, progress=False)  # untimed: one-time costs
    alone = timed(lambda: run_task(tasks(1)[0], device.type, progress=False))
    print(f"{'one seed at a time (run_task)':32s}: {1 / alone:8.3f} trainings/s ({alone:7.1f} s)   {load()}")
    for seeds in args.seeds:
        seconds = timed(lambda: train_batched(tasks(seeds), device, progress=False))
        print(f"{f'{seeds} seeds as one batch':32s}: {seeds / seconds:8.3f} trainings/s ({seconds:7.1f} s), "
              f"{alone * seeds / seconds:5.2f}x   {load()}")


if __name__ == "__main__":
    main()
