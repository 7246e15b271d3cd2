"""Benchmark: how close the image trainings' steps come to the machine, in one run.

    python -m benchmarks.machine_share [--steps 10] [--repeats 3] [--threads 1 2]

For the default ViT (`real.models.vit`), CNN (`real.models.cnn`) and AlterNet (`pk_train.alternet`) on the
default images' shape, batch `real.batch_size`: the training step as `fit` runs it (augmentation, forward,
backward, AdamW, schedule; eager, as the default run), timed over `--steps` steps from a fresh model, the median
of `--repeats` passes after a warm-up pass, alternated with a 2048 x 2048 x 2048 float32 matmul (the cores' peak,
`benchmarks.ensemble.matmul_peak_gflops`) on the same intra-op thread count: 1 as `run_task`'s workers, then 2.

FLOPs: torch's FlopCounterMode on one forward and backward of a batch (`benchmarks.image_trainer.flops_per_image`),
each op counted from its shapes: 2 m n k per matmul (linear layers, attention's QK^T and AV), 2 Cin Cout kh kw
Hout Wout per convolution and image; backward counted op by op (input and weight gradients: twice the forward,
so a step is about 3x its forward, less the first layer's input gradient, which the images do not need).
Elementwise ops, normalisation, softmax and AdamW are not counted: the rate is a lower bound on the work done.
tests/test_machine_share.py checks the count against these formulas for the ViT and the CNN.

Beside the step's rate, torch.profiler's self times on one more pass split the step: the share of that pass's time in
the counted ops (matmuls and convolutions) and their own rate. Counted ops near the peak and a small share of
the time: no faster kernel is left, only less work (or fewer, fused, ops); far below the peak: a kernel is.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from functools import partial
from pathlib import Path

import vitheory  # noqa: F401  (the CPU pins, before torch loads)
import torch

from benchmarks import load_average
from benchmarks.ensemble import matmul_peak_gflops
from benchmarks.image_trainer import flops_per_image
from benchmarks.levers import alternate, training_seconds
from vitheory.core.device import seeded
from vitheory.images.prepare import prepare
from vitheory.images.training import build_model, fit, load_images
from vitheory.params import DEFAULT_PATH, load_params
from vitheory.pk22.trainings import build_alternet
from vitheory.report import cpu_description, source_revision

PEAK_SIZE = 2048
PEAK = f"{PEAK_SIZE}^3 matmul"
MATMULS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}  # and every op named *convolution*


def counted_seconds(build, cfg, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """Seconds of one profiled pass of `fit` spent in matmuls and convolutions (the ops FlopCounterMode counts),
    by torch.profiler's self CPU times (their own kernels, not the ops they call), and the pass's seconds: both
    from the same pass, so that a shared machine's load falls on both."""
    model = seeded(0, build)
    start = time.perf_counter()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        fit(model, x, y, cfg, epochs=1, seed=0, progress=False)
    seconds = time.perf_counter() - start
    return sum(event.self_cpu_time_total for event in profile.key_averages()
               if event.key in MATMULS or "convolution" in event.key) / 1e6, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10, help="training steps per timed pass")
    parser.add_argument("--repeats", type=int, default=3, help="alternated passes per model and thread count")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    print(f"commit {source_revision(DEFAULT_PATH.parent)}; {cpu_description()}; torch {torch.__version__}, "
          f"MKL_CBWR={os.environ['MKL_CBWR']}, oneDNN's convolutions at most {os.environ['ONEDNN_MAX_CPU_ISA']}")
    print(f"before: {load_average()}")
    params = load_params(DEFAULT_PATH)
    cfg = params.real
    with tempfile.TemporaryDirectory() as folder:
        prepare(params.images, Path(folder) / "images")
        data = load_images(Path(folder) / "images", ("train",), torch.device("cpu"))
    shape = (data.image_size, data.channels, data.n_classes)
    n = args.steps * cfg.batch_size  # whole batches: every step the default batch
    x, y = data.x["train"][:n], data.y["train"][:n]
    builders = {"ViT": partial(build_model, cfg.models.vit, *shape), "CNN": partial(build_model, cfg.models.cnn, *shape),
                "AlterNet": partial(build_alternet, params.pk_train.alternet, *shape)}
    step_flops = {name: flops_per_image(build, x[:cfg.batch_size], y[:cfg.batch_size]) * cfg.batch_size
                  for name, build in builders.items()}
    print(f"{params.images.dataset}, {data.image_size} x {data.image_size} x {data.channels}, batch {cfg.batch_size}, "
          f"{args.steps} steps per pass, median of {args.repeats} alternated passes after a warm-up; FLOPs by "
          "FlopCounterMode (matmuls and convolutions, forward and backward, from their shapes)\n")
    print("| threads | step | MFLOP per step | ms per step | GFLOP/s | share of peak | time in matmuls and "
          "convolutions | their GFLOP/s | their share of peak |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for threads in args.threads:
        torch.set_num_threads(threads)
        variants = {name: partial(training_seconds, build, cfg, x, y, threads) for name, build in builders.items()}
        variants[PEAK] = partial(matmul_peak_gflops, PEAK_SIZE)  # its entry is GFLOP/s, not seconds
        alternate(variants, 1)  # warm-up: allocations, oneDNN's primitives for each shape
        found = alternate(variants, args.repeats)
        peak = found.pop(PEAK)
        print(f"| {threads} | {PEAK} | {2 * PEAK_SIZE ** 3 / 1e6:,.0f} | {2 * PEAK_SIZE ** 3 / peak / 1e6:.1f} | "
              f"{peak:.1f} | 100% | | | |")
        for name, seconds in found.items():
            step, flops = seconds / args.steps, step_flops[name]
            kernels, profiled = counted_seconds(builders[name], cfg, x, y)
            kernel_rate = flops * args.steps / kernels / 1e9
            print(f"| {threads} | {name} | {flops / 1e6:,.0f} | {step * 1e3:.1f} | {flops / step / 1e9:.1f} | "
                  f"{flops / step / 1e9 / peak:.0%} | {kernels / profiled:.0%} | {kernel_rate:.1f} | "
                  f"{kernel_rate / peak:.0%} |")
    print(f"\nafter: {load_average()}")


if __name__ == "__main__":
    main()
