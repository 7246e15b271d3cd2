"""The image trainers' torch.compile switches (real.compile_by_kind, one per model kind): validated like every knob,
a worker compiling a kind once for all its seeds, its on-disk cache kept out of git and of every DVC output."""

import subprocess
from dataclasses import fields, replace
from functools import partial

import pytest
import torch
import yaml
from conftest import ROOT
from torch._dynamo.utils import counters

from vitheory.core.device import seeded
from vitheory.images.batched import INDUCTOR_CACHE, compiles
from vitheory.images.models import ARCHITECTURES
from vitheory.images.params import CompileParams, ViTPreset
from vitheory.images.training import build_model, fit
from vitheory.params import ParamsError, load_params, parse_params
from vitheory.pk22.models import AlterNet


def test_each_compile_switch_takes_only_true_or_false_and_says_so_in_one_line():
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert all(isinstance(on, bool) for on in vars(parse_params(raw).real.compile_by_kind).values())
    raw["real"]["compile_by_kind"]["vit"] = "yes"
    with pytest.raises(ParamsError, match=r"^real\.compile_by_kind\.vit.*'yes'.*true or false[^\n]*$"):
        parse_params(raw)


def test_every_image_model_kind_has_its_switch_and_only_its_own_turns_it_on():
    models = [*dict.fromkeys(ARCHITECTURES.values()), AlterNet]  # train_real's registered classes and pk_train's
    kinds = [model.KIND for model in models]
    assert sorted(kinds) == sorted(f.name for f in fields(CompileParams))
    cfg = load_params().real
    for kind in kinds:
        only = replace(cfg, compile_by_kind=replace(CompileParams.every_kind(False), **{kind: True}))
        assert [compiles(model, only) for model in models] == [k == kind for k in kinds]
    assert not compiles(torch.nn.Linear, replace(cfg, compile_by_kind=CompileParams.every_kind(True)))


def test_a_worker_compiles_a_model_kind_once_for_every_seed(monkeypatch):
    """The second seed's model, a new instance of the kind, reuses the graphs the first one compiled
    (dynamo's backend swapped for its eager one: what is counted is dynamo's capture, not inductor's code)."""
    monkeypatch.setattr(torch, "compile", partial(torch.compile, backend="eager"))
    cfg = replace(load_params().real, batch_size=8, warmup_epochs=0,
                  compile_by_kind=replace(CompileParams.every_kind(False), vit=True))
    preset = ViTPreset(patch=2, depth=1, heads=2, width=8, mlp_ratio=1, attention="vanilla", pool="cls")
    x, y = torch.randn(16, 1, 4, 4), torch.randint(0, 3, (16,))
    torch._dynamo.reset()
    counters.clear()
    graphs = []
    for seed in range(2):
        fit(seeded(seed, partial(build_model, preset, 4, 1, 3)), x, y, cfg, epochs=1, seed=seed, progress=False)
        graphs.append(counters["stats"]["unique_graphs"])
    assert graphs[0] >= 1 and graphs[1] == graphs[0], graphs


def test_inductors_cache_is_git_ignored_and_outside_every_dvc_path():
    ignored = subprocess.run(["git", "check-ignore", "-q", str(INDUCTOR_CACHE / "some_kernel.py")], cwd=ROOT)
    assert ignored.returncode == 0, f"{INDUCTOR_CACHE} is not git-ignored"
    dvc_paths = yaml.safe_load((ROOT / "dvc.yaml").read_text())["vars"][0]["paths"].values()
    assert not [path for path in dvc_paths if str(path).startswith(str(INDUCTOR_CACHE))
                or str(INDUCTOR_CACHE).startswith(str(path).rstrip("/") + "/")]
