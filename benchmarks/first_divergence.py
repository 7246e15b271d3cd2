"""Probe: the first op whose output bytes differ between two CPU-numerics settings (issue 45).

    python -m benchmarks.first_divergence [--steps 2] SETTING [SETTING ...]

A SETTING is space-separated `NAME=VALUE` environment variables, e.g. "ATEN_CPU_CAPABILITY=default"
or "MKL_CBWR=COMPATIBLE OMP_NUM_THREADS=1"; `VITHEORY_MKLDNN=0` also turns off torch's oneDNN
(mkldnn) backend. Each setting is compared with `--base` (default: the package's own pins, no variable set), both run
in fresh subprocesses: `train_li_vit` as the stage runs it (params.yaml's data generated, the
ensemble initialised from its seeds) for `--steps` SGD steps, with every aten op's output hashed in
the order it ran. Prints, per setting, the first op whose output differs (its phase, name and shape,
and the largest absolute difference, found by rerunning both sides keeping only that op's output),
how many ops differ, and the largest difference of the trained weights.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import vitheory  # noqa: F401  (the pins, before torch loads)
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from vitheory.li23.attention import train_li_vit
from vitheory.li23.tokens import generate
from vitheory.params import load_params


UNINITIALISED = ("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "set_", "resize_")


class Recorder(TorchDispatchMode):
    """Every aten op's output, hashed in call order; the output of op number `keep` kept whole."""

    def __init__(self, keep: int | None):
        super().__init__()
        self.phase, self.keep = "", keep
        self.ops: list[tuple[str, str, str, str]] = []  # (phase, op, shapes, sha256 of the output bytes)
        self.kept: list[torch.Tensor] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        # fresh storage holds whatever memory held, and a view's bytes only repeat its base's
        computed = not func.is_view and func.__name__.split(".")[0] not in UNINITIALISED
        tensors = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor) and t.device.type != "meta"
                   and computed]
        digest = hashlib.sha256()
        for t in tensors:
            digest.update(t.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes()
                          if t.numel() else b"")
        if len(self.ops) == self.keep:
            self.kept = [t.detach().clone() for t in tensors]
        self.ops.append((self.phase, str(func), " ".join(str(tuple(t.shape)) for t in tensors), digest.hexdigest()))
        return out


def record(steps: int, keep: int | None) -> dict:
    """`train_li_vit` at params.yaml's settings for `steps` steps, under a Recorder."""
    if os.environ.get("VITHEORY_MKLDNN") == "0":
        torch.backends.mkldnn.enabled = False
    torch.manual_seed(0)  # the default generator (seeded from entropy) builds the templates of trained members
    params = load_params()
    cfg = replace(params.train.li_vit, steps=steps, log_every=steps)
    recorder = Recorder(keep)
    with recorder:
        recorder.phase = "generate"
        train, test = generate(params.generate.li_tokens)
        recorder.phase = "train"
        models = train_li_vit(train, test, cfg, torch.device("cpu"), progress=False)
    weights = {f"{i}.{name}": t for i, model in enumerate(models) for name, t in model.state_dict().items()}
    return {"ops": recorder.ops, "kept": recorder.kept, "weights": weights,
            "capability": torch.backends.cpu.get_cpu_capability(), "threads": torch.get_num_threads()}


def setting_environment(setting: str) -> dict[str, str]:
    """This process's environment without the package's pins, plus a SETTING's `NAME=VALUE` pairs: what a
    fresh interpreter then pins is the rest."""
    return {name: value for name, value in os.environ.items()
            if name not in vitheory.CPU_NUMERICS} | dict(pair.split("=", 1) for pair in shlex.split(setting))


def run(setting: str, steps: int, keep: int | None, folder: Path) -> dict:
    env = setting_environment(setting)
    path = folder / f"{abs(hash((setting, keep)))}.pt"
    if path.exists():  # the baseline, recorded once for every setting
        return torch.load(path)
    subprocess.run([sys.executable, "-m", "benchmarks.first_divergence", "--record", str(path),
                    "--steps", str(steps)] + ([] if keep is None else ["--keep", str(keep)]), env=env, check=True)
    return torch.load(path)


def max_abs_difference(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    return max((x.double() - y.double()).abs().max().item() for x, y in zip(a, b))


def compare(base_setting: str, setting: str, steps: int, folder: Path) -> None:
    base, other = run(base_setting, steps, None, folder), run(setting, steps, None, folder)
    differing = [i for i, (x, y) in enumerate(zip(base["ops"], other["ops"])) if x[3] != y[3]]
    weights = max(max_abs_difference([base["weights"][k]], [other["weights"][k]]) for k in base["weights"])
    print(f"[{setting or 'pins only'} against {base_setting or 'pins only'}] ATen {other['capability']}, {other['threads']} threads; "
          f"{len(base['ops'])} ops, {len(differing)} differ; trained weights differ by at most {weights:.3g}")
    if not differing:
        return
    first = differing[0]
    kept = [run(s, steps, first, folder)["kept"] for s in (base_setting, setting)]
    phase, op, shapes, _ = other["ops"][first]
    print(f"  first: op {first} ({phase}) {op} -> {shapes}: max abs difference {max_abs_difference(*kept):.3g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("settings", nargs="*", help='e.g. "ATEN_CPU_CAPABILITY=default"')
    parser.add_argument("--steps", type=int, default=2, help="SGD steps of train_li_vit (default %(default)s)")
    parser.add_argument("--base", default="", help="the setting compared with (default: the pins alone)")
    parser.add_argument("--record", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--keep", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.record:
        torch.save(record(args.steps, args.keep), args.record)
        return
    with tempfile.TemporaryDirectory() as folder:
        for setting in args.settings:
            compare(args.base, setting, args.steps, Path(folder))


if __name__ == "__main__":
    main()
