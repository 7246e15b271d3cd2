"""The image trainers' torch.compile switch (real.compile): validated like every knob, its on-disk cache
kept out of git and of every DVC output."""

import subprocess

import pytest
import yaml
from conftest import ROOT

from vitheory.images.training import INDUCTOR_CACHE
from vitheory.params import ParamsError, parse_params


def test_the_compile_switch_takes_only_true_or_false_and_says_so_in_one_line():
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert isinstance(parse_params(raw).real.compile, bool)
    raw["real"]["compile"] = "yes"
    with pytest.raises(ParamsError, match=r"^real\.compile.*'yes'.*true or false[^\n]*$"):
        parse_params(raw)


def test_inductors_cache_is_git_ignored_and_outside_every_dvc_path():
    ignored = subprocess.run(["git", "check-ignore", "-q", str(INDUCTOR_CACHE / "some_kernel.py")], cwd=ROOT)
    assert ignored.returncode == 0, f"{INDUCTOR_CACHE} is not git-ignored"
    dvc_paths = yaml.safe_load((ROOT / "dvc.yaml").read_text())["vars"][0]["paths"].values()
    assert not [path for path in dvc_paths if str(path).startswith(str(INDUCTOR_CACHE))
                or str(INDUCTOR_CACHE).startswith(str(path).rstrip("/") + "/")]
