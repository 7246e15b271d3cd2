"""Benchmark: issue 42's speed levers on the pipeline's own code paths, side by side in one process.

    python -m benchmarks.levers [--steps 5] [--repeats 2] [--deflate 2] [--tol 1e-2] [--hessian-batch 16] [--alternet]

Each lever's variants run alternated, repeat after repeat, so that they share the machine's load:
- the image trainer (`vitheory.images.training.fit`, the default ViT on the default images' shape,
  batch `real.batch_size`): eager against `real.compile_by_kind`, on 1 thread (as `run_tasks`' workers train)
  and on 2; the compile's first call, timed apart, is left out of the ratio;
- with `--alternet`, one `pk_train` model (AlterNet, its default preset) on 1 thread: eager (before)
  against compiled (after); without it pk_train's projection takes the ViT's ratio;
- one `pk_analysis` Hessian (`vitheory.pk22.hessian.hessian_rows`, the default ViT, one seed, one
  mini-batch; `pk`'s params but a smaller batch, fewer eigenpairs and a looser tolerance by default,
  to keep the run short: fewer products, each spinning BLAS threads alike): numpy's BLAS threads
  unlimited (before) against one (after, the default).
Images are the default preset's, prepared into a temporary folder; the trainers start from fresh
models, the Hessian is that of a ViT trained `--hessian-epochs` on them (a freshly initialised one's
needs many more Lanczos steps than a trained one's). Each compiled variant's first pass (the compile,
per thread count) is timed apart and left out of the ratios. Prints seconds and ratios, then the
committed stage times (`docs/REVIEWING.md`) divided by them: a projection, assuming each lever's ratio
holds over the whole stage.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from statistics import median

import torch

from benchmarks import load_average
from vitheory.core.device import seeded
from vitheory.images.params import CompileParams
from vitheory.images.prepare import prepare
from vitheory.images.training import build_model, fit, load_images
from vitheory.core.paths import ROOT
from vitheory.params import DEFAULT_PATH, load_params
from vitheory.pk22.hessian import hessian_rows
from vitheory.pk22.trainings import build_alternet
from vitheory.reviewing import read_stage_times, stage_seconds


def training_seconds(build, cfg, x, y, threads: int) -> float:
    """One pass of `fit` over (x, y) from a fresh model, on `threads` intra-op threads."""
    torch.set_num_threads(threads)
    model = seeded(0, build)
    start = time.perf_counter()
    fit(model, x, y, cfg, epochs=1, seed=0, progress=False)
    return time.perf_counter() - start


def alternate(variants: dict[str, Callable[[], float]], repeats: int) -> dict[str, float]:
    """Median seconds of each variant, the variants run in turn within each repeat."""
    times = defaultdict(list)
    for _ in range(repeats):
        for name, run in variants.items():
            times[name].append(run())
    return {name: median(seconds) for name, seconds in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=5, help="training steps per timed pass")
    parser.add_argument("--repeats", type=int, default=2, help="alternated repeats of each training variant")
    parser.add_argument("--deflate", type=int, default=2, help="top eigenpairs of the Hessian (pk: 20)")
    parser.add_argument("--hessian-epochs", type=int, default=1, help="epochs the ViT whose Hessian is taken trains")
    parser.add_argument("--tol", type=float, default=1e-2, help="Lanczos tolerance (pk: 1e-4; looser: fewer products)")
    parser.add_argument("--hessian-batch", type=int, default=16, help="images in the Hessian's batch (pk: 32)")
    parser.add_argument("--alternet", action="store_true", help="also the pk_train model (a cold compile of minutes)")
    args = parser.parse_args()
    params = load_params(DEFAULT_PATH)
    eager = replace(params.real, compile_by_kind=CompileParams.every_kind(False))
    compiled = replace(params.real, compile_by_kind=CompileParams.every_kind(True))
    with tempfile.TemporaryDirectory() as folder:
        prepare(params.images, Path(folder) / "images")
        data = load_images(Path(folder) / "images", ("train",), torch.device("cpu"))
    shape = (data.image_size, data.channels, data.n_classes)
    n = args.steps * eager.batch_size  # whole batches: one shape, one compiled graph
    x, y = data.x["train"][:n], data.y["train"][:n]
    ratios = {}

    vit = partial(build_model, params.real.models.vit, *shape)
    firsts = [f"{training_seconds(vit, compiled, x, y, threads):.1f} s on {threads}" for threads in (1, 2)]
    print(f"{params.images.dataset}, {data.image_size} x {data.image_size} x {data.channels}; image trainer, ViT, "
          f"{args.steps} steps of {eager.batch_size}: first compiled pass {', '.join(firsts)} thread(s) "
          "(the compile, from inductor's cache when warm)")
    trainer = alternate({f"{mode} {threads} thread{'s' * (threads > 1)}": partial(training_seconds, vit, cfg, x, y, threads)
                         for threads in (1, 2) for mode, cfg in (("eager", eager), ("compiled", compiled))}, args.repeats)
    for name, seconds in trainer.items():
        print(f"  {name:20s} {seconds:6.2f} s  {args.steps * eager.batch_size / seconds:7.0f} images/s")
    for threads in ("1 thread", "2 threads"):
        ratios[f"compile, {threads}"] = trainer[f"eager {threads}"] / trainer[f"compiled {threads}"]
    ratios["2 threads vs 1, eager"] = trainer["eager 1 thread"] / trainer["eager 2 threads"]

    if args.alternet:
        alternet = partial(build_alternet, params.pk_train.alternet, *shape)
        first = training_seconds(alternet, compiled, x, y, 1)
        print(f"pk_train model, AlterNet, 1 thread: first compiled pass {first:.1f} s")
        model = alternate({"eager (before)": partial(training_seconds, alternet, eager, x, y, 1),
                           "compiled (after)": partial(training_seconds, alternet, compiled, x, y, 1)}, args.repeats)
        for name, seconds in model.items():
            print(f"  {name:20s} {seconds:6.2f} s")
        ratios["pk_train AlterNet, compile"] = model["eager (before)"] / model["compiled (after)"]

    cfg = replace(params.pk, hessian_batches=1, hessian_deflate=args.deflate, hessian_top=min(params.pk.hessian_top, args.deflate),
                  hessian_tol=args.tol, hessian_batch_size=args.hessian_batch)
    torch.set_num_threads(len(os.sched_getaffinity(0)))  # pk_analysis runs in one process on every core
    model = seeded(0, vit)
    fit(model, data.x["train"], data.y["train"], eager, epochs=args.hessian_epochs, seed=0, progress=False)
    images, labels = data.x["train"], data.y["train"]

    def hessian(blas_threads: int | None) -> float:
        start = time.perf_counter()
        hessian_rows("vit", 0, model, images, labels, cfg, params.real, blas_threads=blas_threads)
        return time.perf_counter() - start

    analysis = alternate({"BLAS unlimited (before)": partial(hessian, None), "BLAS 1 thread (after)": partial(hessian, 1)}, 1)
    print(f"pk_analysis Hessian, ViT trained {args.hessian_epochs} epoch(s), one seed, one batch of "
          f"{cfg.hessian_batch_size}, top {args.deflate} deflated, tolerance {args.tol:g}:")
    for name, seconds in analysis.items():
        print(f"  {name:24s} {seconds:6.1f} s")
    ratios["pk_analysis Hessian, BLAS 1 thread"] = analysis["BLAS unlimited (before)"] / analysis["BLAS 1 thread (after)"]

    print(f"\nratios (before / after), {load_average()}:")
    for name, ratio in ratios.items():
        print(f"  {name:36s} {ratio:5.2f}x")
    committed = stage_seconds(read_stage_times(ROOT))  # the committed run's seconds per stage
    train_real = sum(s for name, s in committed.items() if name.startswith("train_real@"))
    projected = {"train_real (6 runs)": (train_real, ratios["compile, 1 thread"]),
                 "pk_train": (committed["pk_train"], ratios.get("pk_train AlterNet, compile", ratios["compile, 1 thread"])),
                 "pk_analysis": (committed["pk_analysis"], ratios["pk_analysis Hessian, BLAS 1 thread"]),
                 "sparsify_real": (committed["sparsify_real"], ratios["compile, 1 thread"])}
    print("\nprojected stage seconds (committed / ratio; compile's first calls not counted):")
    for name, (seconds, ratio) in projected.items():
        print(f"  {name:20s} {seconds:8.1f} -> {seconds / ratio:8.1f}")
    before = sum(committed[name] for name in committed)
    saved = sum(seconds - seconds / ratio for seconds, ratio in projected.values())
    print(f"  {'all stages':20s} {before:8.1f} -> {before - saved:8.1f}")


if __name__ == "__main__":
    main()
