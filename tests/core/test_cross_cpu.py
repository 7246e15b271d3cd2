"""A training step's bytes on a simulated second machine (issues 45, 52): `train_li_vit` at params.yaml's
settings, two SGD steps, run in fresh interpreters under CPU settings, its trained weights compared byte
for byte."""

import os
import platform
import subprocess
import sys

import pytest
from conftest import ROOT

import vitheory

STEP = """
import hashlib, vitheory, torch
from dataclasses import replace
from vitheory.li23.attention import train_li_vit
from vitheory.li23.tokens import generate
from vitheory.params import load_params
params = load_params()
train, test = generate(params.generate.li_tokens)
models = train_li_vit(train, test, replace(params.train.li_vit, steps=2, log_every=2), torch.device("cpu"),
                      progress=False)
print(hashlib.sha256(b"".join(t.numpy().tobytes() for m in models for t in m.state_dict().values())).hexdigest())
"""

x86_64 = pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="the pins are for x86-64")


def _env(**settings: str) -> dict[str, str]:
    """This process's environment without the pinned variables (the package sets them), plus `settings`."""
    return {k: v for k, v in os.environ.items() if k not in vitheory.CPU_NUMERICS and not k.startswith("MKL_")} \
        | settings


def _trained(env: dict[str, str], cores: set[int] | None = None) -> str:
    """The sha256 of the trained weights, STEP run in a fresh interpreter; with `cores`, on those CPUs only
    (a smaller machine)."""
    run = subprocess.run([sys.executable, "-c", STEP], cwd=ROOT, env=env, capture_output=True, text=True,
                         preexec_fn=(lambda: os.sched_setaffinity(0, cores)) if cores else None)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


@x86_64
@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs two CPUs to simulate a machine with one")
def test_a_training_step_has_the_same_bytes_under_settings_the_pins_make_equivalent():
    """A 1-core machine (torch would start one thread, the pin starts 2) trains as this machine does, under
    the default numerics and under the portable opt-in. The control: MKL's COMPATIBLE branch against its
    AUTO one (what an Intel and an AMD CPU run differently under AUTO) trains to other bytes, and the
    comparison sees it."""
    one_core = {min(os.sched_getaffinity(0))}
    ours, portable = _trained(_env()), _trained(_env(**vitheory.PORTABLE_NUMERICS))
    assert _trained(_env(), cores=one_core) == ours
    assert _trained(_env(**vitheory.PORTABLE_NUMERICS), cores=one_core) == portable
    assert portable != ours


def _mkl_branches(env: dict[str, str]) -> set[str]:
    """The CNR branch of every SGEMM call of a matmul, as MKL's verbose log names it; asserts dynamic
    threading is off on each."""
    matmul = "import vitheory, torch; torch.randn(64, 64) @ torch.randn(64, 64)"
    log = subprocess.run([sys.executable, "-c", matmul], cwd=ROOT, env=env | {"MKL_VERBOSE": "1"},
                         capture_output=True, text=True, check=True).stdout
    calls = [line for line in log.splitlines() if line.startswith("MKL_VERBOSE SGEMM")]
    assert calls and all(" Dyn:0 " in line for line in calls), log
    return {line.split(" CNR:")[1].split()[0] for line in calls}


@x86_64
def test_mkl_runs_its_own_branch_by_default_and_the_portable_one_when_asked():
    """By default MKL runs its own branch for the CPU (AUTO: an Intel and an AMD machine may run different
    code, bytes are promised on one CPU model); MKL_CBWR=COMPATIBLE, the opt-in, runs the branch MKL runs
    on both vendors. Its verbose log names the branch every call ran."""
    assert _mkl_branches(_env()) == {"AUTO"}
    assert _mkl_branches(_env(**vitheory.PORTABLE_NUMERICS)) == {"COMPATIBLE"}
