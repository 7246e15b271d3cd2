"""Benchmark: torch.compile on a whole stage's trainings, the compile counted (issue 52).

    python -m benchmarks.compile_stage [--model vit] [--seeds 6] [--epochs 40] [--repeats 1]

Trains one model's seeds as `train_real` does (`run_tasks`: one single-thread worker per core, the
held-out splits evaluated every `real.eval_every` epochs), on the default preset's images prepared
into a temporary folder, once eager and once with `real.compile_by_kind` on for the model's kind, each in a
fresh process with a cold inductor cache of its own (a first `dvc repro` compiles from nothing; every
worker pays its compile, and the last, smaller batch of an epoch is a second graph). The variants
alternate `--repeats` times; prints each one's wall-clock seconds and the ratio eager / compiled with
the load average. `--model alternet` trains pk_train's AlterNet. The default seeds and epochs are
params.yaml's: what the stage runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

import vitheory  # noqa: F401  (the CPU settings, before torch loads)
import torch

from benchmarks import load_average
from vitheory.images.params import CompileParams
from vitheory.images.prepare import prepare
from vitheory.images.recipe import FitTask
from vitheory.images.training import build_model, load_images, run_tasks
from vitheory.params import DEFAULT_PATH, load_params
from vitheory.pk22.trainings import build_alternet

VARIANTS = ("eager", "compiled")


def stage_seconds(model: str, seeds: int, epochs: int, compiled: bool, images: Path) -> float:
    """Wall-clock seconds of `seeds` trainings of `model` for `epochs`, run as train_real runs them."""
    params = load_params(DEFAULT_PATH)
    data = load_images(images, ("train", "val", "test"), torch.device("cpu"))
    shape = (data.image_size, data.channels, data.n_classes)
    build = (partial(build_alternet, params.pk_train.alternet, *shape) if model == "alternet"
             else partial(build_model, getattr(params.real.models, model), *shape))
    kind = type(build()).KIND
    cfg = replace(params.real, compile_by_kind=replace(CompileParams.every_kind(False), **{kind: compiled}))
    held_out = {name: (data.x[name], data.y[name]) for name in ("val", "test")}
    tasks = [FitTask(build, cfg, data.x["train"], data.y["train"], epochs, seed, held_out, desc=f"{model} seed {seed}")
             for seed in range(seeds)]
    start = time.perf_counter()
    run_tasks(tasks, torch.device("cpu"), progress=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    params = load_params(DEFAULT_PATH)
    parser.add_argument("--model", default="vit", choices=("vit", "vit_positional", "cnn", "alternet"))
    parser.add_argument("--seeds", type=int, default=params.real.seeds)
    parser.add_argument("--epochs", type=int, default=params.real.epochs)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--measure", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--images", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(stage_seconds(args.model, args.seeds, args.epochs, args.measure == "compiled", args.images)))
        return
    with tempfile.TemporaryDirectory() as folder:
        images = Path(folder) / "images"
        prepare(params.images, images)
        print(f"{args.model}, {args.seeds} seeds x {args.epochs} epochs; before: {load_average()}", flush=True)
        seconds: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
        for _ in range(args.repeats):
            for variant in VARIANTS:
                with tempfile.TemporaryDirectory() as cache:  # cold: the compile counts
                    command = [sys.executable, "-m", "benchmarks.compile_stage", "--measure", variant, "--model",
                               args.model, "--seeds", str(args.seeds), "--epochs", str(args.epochs),
                               "--images", str(images)]
                    run = subprocess.run(command, env=os.environ | {"TORCHINDUCTOR_CACHE_DIR": cache},
                                         capture_output=True, text=True, check=True)
                seconds[variant].append(json.loads(run.stdout))
                print(f"  {variant:8s} {seconds[variant][-1]:8.1f} s  ({load_average()})", flush=True)
    best = {variant: min(found) for variant, found in seconds.items()}
    print(f"eager / compiled, best of {args.repeats}: {best['eager'] / best['compiled']:.2f}x ({load_average()})")


if __name__ == "__main__":
    main()
