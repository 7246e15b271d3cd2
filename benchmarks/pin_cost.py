"""Benchmark: what a CPU-numerics setting costs, in the trainings it governs (issue 45).

    python -m benchmarks.pin_cost [--repeats 3] SETTING [SETTING ...]

A SETTING is space-separated `NAME=VALUE` environment variables (as in benchmarks.first_divergence),
"" the package's own settings alone (MKL's AUTO branch since issue 52; `"MKL_CBWR=COMPATIBLE"` the
portable opt-in). Each setting runs in fresh subprocesses, alternating with the others
`--repeats` times (a shared machine's load then falls on every setting alike), and times three
trainings as the pipeline runs them: 100 SGD steps of `train_li_vit` (params.yaml's model, 2
threads), and 20 AdamW steps of the default real-image ViT and of the CNN (params.yaml's recipe, one
thread, as a `train_real` worker, on random images of the cluttered canvas's shape). With
`--pk-train`, also AlterNet (pk_train's other model with attention) and the ViT's and AlterNet's
steps through `real.compile_by_kind`, timed after a first compiled pass (the compile itself, left out): issue
42's levers together with a setting. Prints each setting's fastest seconds per training, then each
setting's ratio to the first one's, training by training, with the load average.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import replace
from functools import partial

import vitheory  # noqa: F401  (the pins, before torch loads)
import torch

from benchmarks import load_average
from benchmarks.first_divergence import setting_environment
from vitheory.core.device import seeded
from vitheory.images.params import CompileParams
from vitheory.images.training import build_model, fit
from vitheory.li23.attention import train_li_vit
from vitheory.li23.tokens import generate
from vitheory.params import load_params
from vitheory.pk22.trainings import build_alternet

STEPS = 20  # of each real-image training
ATTENTION_MODELS = ("vit", "alternet")  # compiled with --pk-train: the pin's cost is in their matmuls


def measure(pk_train: bool) -> dict[str, float]:
    params = load_params()
    train, test = generate(params.generate.li_tokens)
    start = time.perf_counter()
    train_li_vit(train, test, replace(params.train.li_vit, steps=100, log_every=100), torch.device("cpu"),
                 progress=False)
    found = {"train_li_vit, 100 steps": time.perf_counter() - start}
    torch.set_num_threads(1)
    cfg, side = params.real, params.images.cluttered.canvas
    x = torch.randn(STEPS * cfg.batch_size, 1, side, side, generator=torch.Generator().manual_seed(0))
    y = torch.randint(0, 10, (len(x),), generator=torch.Generator().manual_seed(1))
    compiled = replace(cfg, compile_by_kind=CompileParams.every_kind(True))
    builders = {name: partial(build_model, getattr(cfg.models, name), side, 1, 10) for name in ("vit", "cnn")}
    if pk_train:
        builders["alternet"] = partial(build_alternet, params.pk_train.alternet, side, 1, 10)
    for name, build in builders.items():
        model = seeded(0, build)
        start = time.perf_counter()
        fit(model, x, y, cfg, epochs=1, seed=0, progress=False)
        found[f"{name}, {STEPS} steps"] = time.perf_counter() - start
        if pk_train and name in ATTENTION_MODELS:
            fit(model, x, y, compiled, epochs=1, seed=0, progress=False)  # the compile
            start = time.perf_counter()
            fit(model, x, y, compiled, epochs=1, seed=0, progress=False)
            found[f"{name} compiled, {STEPS} steps"] = time.perf_counter() - start
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("settings", nargs="*", help='e.g. "" (the pins) and "MKL_CBWR=COMPATIBLE"')
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pk-train", action="store_true", help="also AlterNet, and both through torch.compile")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.pk_train)))
        return
    best: dict[str, dict[str, float]] = {}
    for _ in range(args.repeats):
        for setting in args.settings:
            command = [sys.executable, "-m", "benchmarks.pin_cost", "--measure", *(["--pk-train"] * args.pk_train)]
            run = subprocess.run(command, env=setting_environment(setting),
                                 capture_output=True, text=True, check=True)
            for name, seconds in json.loads(run.stdout).items():
                best.setdefault(setting, {})[name] = min(seconds, best.get(setting, {}).get(name, seconds))
    for setting, found in best.items():
        print(f"[{setting or 'pins only'}] " + ", ".join(f"{name}: {s:.2f} s" for name, s in found.items()))
    base, *others = best
    for setting in others:  # each setting against the first, training by training
        print(f"[{setting} / {base or 'pins only'}] " + ", ".join(
            f"{name}: {best[setting][name] / seconds:.2f}x" for name, seconds in best[base].items() if name in best[setting])
            + f"  ({load_average()})")


if __name__ == "__main__":
    main()
