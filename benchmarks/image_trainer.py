"""Benchmark: the image trainer's two ways of training several seeds, side by side in one run.

    python -m benchmarks.image_trainer [--model vit|cnn] [--seeds 2] [--epochs 2] [--preset presets/quick.yaml]

`train_real` and `pk_train` train one model per seed (and per data fraction). The one-seed-at-a-time
loop trains them in one process on every core; `run_tasks` trains them side by side, one
single-thread worker process per core. Both train the same models, with the params' recipe and model
preset (with a `--preset` merged in), on images prepared into a temporary folder. Prints images/s of each, the
speed-up, and the share of the float32 matmul peak (every core, measured in the same run) that each
reaches, from FLOPs counted by torch's FlopCounterMode on one training step.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

import torch
import yaml
import torch.nn.functional as F  # noqa: N812
from torch.utils.flop_counter import FlopCounterMode

from benchmarks import load_average
from benchmarks.ensemble import matmul_peak_gflops
from vitheory.core.device import seeded
from vitheory.images.prepare import prepare
from vitheory.images.recipe import FitTask
from vitheory.images.training import build_model, fit, load_images, run_tasks
from vitheory.params import DEFAULT_PATH, parse_params
from vitheory.preset import merge


def flops_per_image(build, x: torch.Tensor, y: torch.Tensor) -> float:
    """FLOPs of one training step (forward and backward) per image, as counted by torch."""
    model = build()
    with FlopCounterMode(display=False) as counter:
        F.cross_entropy(model(x), y).backward()
    return counter.get_total_flops() / len(y)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=["vit", "vit_positional", "cnn"], default="vit")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--preset", type=Path, help="a preset merged into params.yaml first")
    args = parser.parse_args()
    raw = yaml.safe_load(DEFAULT_PATH.read_text())
    params = parse_params(merge(raw, yaml.safe_load(args.preset.read_text())) if args.preset else raw)
    cfg = replace(params.real, epochs=args.epochs)
    with tempfile.TemporaryDirectory() as folder:
        prepare(params.images, Path(folder) / "images")
        data = load_images(Path(folder) / "images", ("train",), torch.device("cpu"))
    x, y = data.x["train"], data.y["train"]
    build = partial(build_model, getattr(cfg.models, args.model), data.image_size, data.channels, data.n_classes)
    cores = torch.get_num_threads()
    images = args.seeds * args.epochs * len(y)
    flops = flops_per_image(build, x[:cfg.batch_size], y[:cfg.batch_size])
    peak = matmul_peak_gflops()
    print(f"{args.model} on {params.images.dataset} ({len(y)} training images of {data.image_size} x "
          f"{data.image_size}), {args.seeds} seeds x {args.epochs} epochs, {cores} cores; "
          f"{sum(p.numel() for p in build().parameters())} parameters, {flops / 1e6:.1f} MFLOP per image and step; "
          f"float32 matmul peak {peak:.1f} GFLOP/s")

    start = time.perf_counter()
    for seed in range(args.seeds):
        fit(seeded(seed, build), x, y, cfg, epochs=args.epochs, seed=seed, progress=False)
    loop_s = time.perf_counter() - start

    tasks = [FitTask(build, cfg, x, y, args.epochs, seed, {}) for seed in range(args.seeds)]
    start = time.perf_counter()
    run_tasks(tasks, torch.device("cpu"), progress=False)
    side_s = time.perf_counter() - start

    for label, seconds in (("one seed at a time, every core", loop_s), ("seeds side by side, 1 thread each", side_s)):
        rate = images / seconds
        print(f"{label:35s}: {rate:8.1f} images/s ({seconds:.1f} s), {rate * flops / 1e9:.2f} GFLOP/s = "
              f"{rate * flops / 1e9 / peak:.1%} of peak")
    print(f"speed-up: {loop_s / side_s:.2f}x ({load_average()})")


if __name__ == "__main__":
    main()
