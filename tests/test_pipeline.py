"""The pipeline as a user runs it: dvc.yaml's consistency, then dvc itself on a temporary copy."""

import contextlib
import csv
import hashlib
import importlib
import inspect
import json
import os
import pkgutil
import shutil
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from safetensors.torch import load_file
from conftest import ROOT
from torch import nn

import vitheory
from vitheory.core.checkpoint import save_checkpoint
from vitheory.core.claims import FAILS, HOLDS, INCONCLUSIVE
from vitheory.core.cli import TIMINGS
from vitheory.core.config import set_value_at, view
from vitheory.core.errors import ParamsError
from vitheory.core.paths import artifact, outputs, stages
from vitheory.grid import COLUMNS as ATLAS_COLUMNS
from vitheory.grid import SECTION as ATLAS
from vitheory.papers import PAPERS
from vitheory.pipeline import differences, fix

STAGES = stages()
CLAIM_IDS = [claim.id for paper in PAPERS for claim in paper.claims]


def _leaf_keys(node, prefix=""):
    if not isinstance(node, dict):
        return [prefix]
    return [key for name, child in node.items() for key in _leaf_keys(child, f"{prefix}{name}.")]


def test_every_stage_deps_are_what_it_imports():
    """dvc.yaml's code deps are exactly what each stage imports (`python -m vitheory.pipeline --fix`)."""
    assert not differences(), "\n".join(differences())


def test_fix_rewrites_a_wrong_deps_list_and_check_then_passes(tmp_path):
    broken = tmp_path / "dvc.yaml"
    text = (ROOT / "dvc.yaml").read_text()
    at = text.index("  generate:\n")
    broken.write_text(text[:at] + text[at:].replace("      - vitheory/li23/tokens.py\n", "      - vitheory/pk22/params.py\n", 1))
    (tmp_path / "stages").symlink_to(ROOT / "stages")
    (tmp_path / "vitheory").symlink_to(ROOT / "vitheory")
    assert differences(broken) == ["stage generate: deps missing ['vitheory/li23/tokens.py']; "
                                   "not imported ['vitheory/pk22/params.py']"]
    assert fix(broken) == ["generate"]
    assert broken.read_text() == text and not differences(broken)


@pytest.mark.parametrize("name", sorted(STAGES))
def test_a_stage_reads_the_params_it_lists_and_no_other(name):
    """Every key a stage's dvc.yaml entry lists has a type in the stage's PARAMS; a key it does not list
    is out of its reach (a ParamsError naming it, not a value DVC does not track)."""
    stage = STAGES[name]
    declared = importlib.import_module(stage["cmd"].split()[2]).PARAMS
    listed = [key for key in stage.get("params", []) if isinstance(key, str)]
    whole_file = len(listed) < len(stage.get("params", []))
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    params = view(raw, declared, list(declared) if whole_file else listed, f"stage {name}")
    for key in listed:
        value = params
        for part in key.split("."):
            value = getattr(value, part)
    if not whole_file:
        unlisted = next(section for section in raw if not any(key.split(".")[0] == section for key in listed))
        with pytest.raises(ParamsError, match=f"stage {name} reads params key {unlisted}, which it does not list"):
            getattr(params, unlisted)


def test_every_param_is_read_by_a_stage():
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    listed = [p for stage in STAGES.values() for p in stage.get("params", []) if isinstance(p, str)]
    unread = [key for key in _leaf_keys(params) if not key.startswith(f"{ATLAS}.")  # read by vitheory.atlas
              and not any(key == p or key.startswith(p + ".") for p in listed)]
    assert not unread, f"params no stage lists (dead, or a stage misses them): {unread}"


def test_the_paper_preset_scales_every_stage_that_computes():
    preset = _leaf_keys(yaml.safe_load((ROOT / "presets/paper.yaml").read_text()))
    # handbuilt trains nothing and reads the spatial data the preset scales: it has no size of its own
    unscaled = [name for name, stage in STAGES.items() if name not in ("check_params", "render", "report", "handbuilt")
                and not any(key == p or key.startswith(p + ".") for p in stage.get("params", [])
                            if isinstance(p, str) and p != "train.device" for key in preset)]
    assert not unscaled, f"presets/paper.yaml changes none of the params of {unscaled}"


RERUN_ALWAYS = {"check_params", "report"}  # a persist stamp; REPORT.md, neither a metric nor a plot


def test_every_stage_but_two_can_be_restored_from_the_run_cache():
    """DVC keeps no run-cache for a stage with a persist output or a plain `cache: false` one (neither
    metric nor plot); the resume state lies outside every output, so that DVC never removes it."""
    for name, stage in STAGES.items():
        entries = [(kind, *next(iter(o.items()))) if isinstance(o, dict) else (kind, o, {})
                   for kind in ("outs", "metrics", "plots") for o in stage.get(kind, [])]
        blocking = [path for kind, path, flags in entries
                    if flags.get("persist") or (kind == "outs" and flags.get("cache") is False)]
        assert bool(blocking) == (name.split("@")[0] in RERUN_ALWAYS), (name, blocking)
        for resume in (artifact("real_resume"), artifact("pk_resume")):
            assert not any(resume == Path(path) or Path(path) in resume.parents or resume in Path(path).parents
                           for _, path, _ in entries), (name, resume)


def test_render_settings_do_not_retrain():
    for name in ("generate", "train_li_vit"):
        assert not any(str(p).startswith("render") for p in STAGES[name].get("params", []))


# --- dvc on a temporary copy ----------------------------------------------------------------------

TINY = {"generate.li_tokens.n_train": 64, "generate.li_tokens.n_test": 64,
        "train.li_vit.steps": 40, "train.li_vit.log_every": 20, "train.li_vit.model.width": 20,
        "train.li_vit.seeds": 2, "report.bootstrap": 100,
        "phase.grids.default": {"alpha_star": [0.2, 0.4], "n_train": [2, 8], "seeds": 2},
        "phase.grids.wide": {"alpha_star": [0.1, 0.2, 0.4], "n_train": [2, 4, 8], "seeds": 2}, "phase.steps": 20,
        "phase.data.n_test": 50, "phase.data.pool_size": 8,
        "sparsify.keep_ratio": [0.5], "sparsify.seeds": 2, "sparsify.steps": 20, "sparsify.data.n_test": 50,
        "generate.spatial.n_patches": 16, "generate.spatial.dim": 8, "generate.spatial.n_train": 64,
        "generate.spatial.n_test": 50, "generate.spatial_control.n_train": 64, "generate.spatial_control.n_test": 50,
        "spatial.seeds": 2, "spatial.steps": 20, "spatial.log_every": 10, "spatial.vit.pos_dim": 8,
        "spatial.lr_mixing": 10.0,  # 20 and 50 diverged on these tiny data, one partition or the other
        "spatial.glm.steps": 10, "control.seeds": 2, "control.steps": 10, "control.glm.steps": 10,
        "transfer.n_train": [8, 16], "transfer.n_test": 50, "transfer.finetune_steps": 10,
        "handbuilt.pos_dim": 16, "pos_dim_sweep.pos_dims": [4, 8], "pos_dim_sweep.seeds": 2,
        "noise_sweep.n_train": [1, 2, 8], "noise_sweep.seeds": 2,
        "init_error.n_train": [1, 2], "init_error.reference_n_train": 6, "init_error.seeds": 2,
        "init_error.value_error": [0.0, 1.0],
        # the 8 x 8 digits (the quick preset's): the mechanics, at a quarter of the cluttered default's tokens
        "images.dataset": "digits", "sparsify_real.keep_tokens": [12, 8], "pk.frequencies": [0.0, 0.5, 1.0],
        "images.train_fraction": 0.1, "real.seeds": 2, "real.epochs": 1,
        "real.models.vit.width": 16, "real.models.vit_positional.width": 16,
        "sparsify_real.finetune_epochs": 1, "sparsify_real.spurious.epochs": 1,
        "pk.n_images": 50, "pk.hessian_batches": 1, "pk.hessian_batch_size": 16, "pk.hessian_top": 2,
        "pk.hessian_tol": 0.01, "pk.hessian_density_steps": 4, "pk.hessian_deflate": 2, "pk.hessian_density_probes": 2, "pk_train.fractions": [0.5], "pk_train.alternet.widths": [8, 16], "real.models.cnn.widths": [8, 16],
        "pk_landscape.n_images": 16, "pk_landscape.plane_points": 3, "pk_landscape.line_points": 5,
        "pk_landscape.lines": 1, "pk_frequency.cutoffs": [0.25, 0.5], "pk_frequency.control_cutoff": 0.5,
        "pk_frequency.control_epochs": 1, "pk_locality.windows": [3], "pk_locality.hessian_batches": 1}


def _run(cmd, cwd, check=True, env=None):
    env = os.environ | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                        "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "test", "GIT_COMMITTER_EMAIL": "t@t"} | (env or {})
    run = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if check and run.returncode != 0:
        raise AssertionError(f"{cmd} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    return run


def _dvc(*args, cwd, check=True):
    return _run([sys.executable, "-m", "dvc", *args], cwd, check)


def run_and_commit(repo: Path) -> Path:
    """`repo`'s files as a git and DVC repository, its pipeline run and the results committed (the DVC cache
    holds its cached outputs): the small repositories the verify and bundle tests build."""
    _run(["git", "init", "-q"], repo)
    _dvc("init", "-q", cwd=repo)
    _dvc("repro", "-q", cwd=repo)
    _run(["git", "add", "-A"], repo)
    _run(["git", "commit", "-qm", "run"], repo)
    return repo


def fresh_clone(repo: Path, into: Path) -> Path:
    """A fresh clone of `repo`: what git holds, no DVC cache."""
    _run(["git", "clone", "-q", str(repo), str(into / "clone")], into)
    return into / "clone"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A committed copy of the repository (files git tracks or would), tiny params, after `dvc repro`."""
    copy = tmp_path_factory.mktemp("repo")
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                             cwd=ROOT, capture_output=True, text=True, check=True)
    for rel in tracked.stdout.split():
        if (ROOT / rel).is_file():
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, copy / rel)
    params = yaml.safe_load((copy / "params.yaml").read_text())
    for key, value in TINY.items():
        set_value_at(params, key, value)
    (copy / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    _run(["git", "init", "-q"], copy)
    _run(["git", "add", "-A"], copy)
    _run(["git", "commit", "-qm", "copy"], copy)
    _dvc("repro", cwd=copy)
    return copy


@pytest.mark.pipeline
def test_repro_writes_every_declared_output_and_the_claims(repo):
    for name, stage in STAGES.items():
        for out in outputs(stage):
            assert (repo / out).exists(), f"{name} did not write {out}"
    claims = json.loads((repo / artifact("claims")).read_text())["claims"]
    assert [c["id"] for c in claims] == CLAIM_IDS
    for claim in claims:
        assert set(claim) == {"id", "paper", "statement", "metric", "measured", "criteria", "conditions",
                              "verdict", "units", "interval", "variants", "evidence"}
        for judged in (claim, *claim["variants"].values()):
            assert judged["verdict"] in (HOLDS, FAILS, INCONCLUSIVE)
            assert judged["criteria"], f"{claim['id']} has no criterion"
            for check in (*judged["criteria"].values(), *judged["conditions"].values()):
                assert {"threshold", "source", "kind", "method", "interval", "coverage", "units", "df", "margin",
                        "verdict"} <= set(check)
                low, high = check["interval"]
                assert low is None or low <= high
                assert check["source"].startswith(("paper: ", "ours: "))
        for path in claim["evidence"]:
            assert (repo / artifact("report").parent / path).exists(), path
    codes = {HOLDS: "+", FAILS: "-", INCONCLUSIVE: "?"}
    by_paper = {paper.key: "".join(codes[c["verdict"]] for c in claims if c["paper"] == paper.key) for paper in PAPERS}
    assert json.loads((repo / artifact("verdicts")).read_text()) == {c["id"]: c["verdict"] for c in claims} | by_paper
    report = (repo / artifact("report")).read_text()
    for claim_id in CLAIM_IDS:
        assert f"| {claim_id} |" in report
    for figure in (repo / artifact("figures")).glob("*.png"):
        assert f"figures/{figure.name}" in report, f"{figure.name} is not in the report"


@pytest.mark.pipeline
def test_every_checkpoint_rebuilds_in_a_fresh_interpreter(repo, tmp_path):
    """`vitheory.load_checkpoint(folder)` alone, as the README shows it, in a new interpreter, for every
    checkpoint the pipeline wrote, and for one of each model class the pipeline does not save."""
    written = sorted(config.parent for config in (repo / "models").rglob("config.json"))
    in_pipeline = {json.loads((folder / "config.json").read_text())["class"] for folder in written}
    assert {"vitheory.li23.models.ShallowViT", "vitheory.jsl22.models.PositionalViT", "vitheory.jsl22.models.PatchGLM",
            "vitheory.images.models.SmallViT", "vitheory.images.models.SmallResNet",
            "vitheory.pk22.models.AlterNet"} <= in_pipeline
    classes = _model_classes()
    extra = []
    for path in sorted(set(classes) - in_pipeline):  # built from the smallest config each accepts
        configs = {"vitheory.li23.models.TokenCNN": {"dim": 4, "width": 2, "kernel": 3, "conv_init_std": 1.0,
                                                     "out_init_std": 0.3},
                   "vitheory.jsl22.models.MultiHeadViT": {"n_patches": 4, "dim": 3, "width": 2, "heads": 2,
                                                          "scores": "tokens", "pos_init_std": 1.0,
                                                          "readout_init_std": 1.0}}
        save_checkpoint(tmp_path / path, classes[path](**configs[path]), {})
        extra.append(tmp_path / path)
    script = ("import json, sys, vitheory\n"
              "models = [type(vitheory.load_checkpoint(f)) for f in sys.argv[1:]]\n"
              "print(json.dumps([f'{cls.__module__}.{cls.__qualname__}' for cls in models]))")
    run = _run([sys.executable, "-c", script, *map(str, written + extra)], repo)
    loaded = json.loads(run.stdout)
    assert loaded[:len(written)] == [json.loads((f / "config.json").read_text())["class"] for f in written]
    assert set(loaded) == set(classes)


def _model_classes() -> dict[str, type[nn.Module]]:
    """Every class a checkpoint may hold, by import path: the nn.Modules of vitheory's `models` modules
    built from keywords alone, as load_checkpoint builds them from config.json (the blocks inside
    them take positional arguments)."""
    found = {}
    for module in pkgutil.walk_packages(vitheory.__path__, "vitheory."):
        if module.name.endswith(".models"):
            for cls in vars(importlib.import_module(module.name)).values():
                if (isinstance(cls, type) and issubclass(cls, nn.Module) and cls.__module__ == module.name
                        and all(p.kind is p.KEYWORD_ONLY for p in inspect.signature(cls).parameters.values())):
                    found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return found


@pytest.mark.pipeline
def test_plots_show_every_figure_and_every_logged_series(repo):
    shown = json.loads(_dvc("plots", "show", "--json", cwd=repo).stdout)
    assert not shown.get("errors"), shown.get("errors")
    kinds = {path: {plot["type"] for plot in plots} for path, plots in shown["data"].items()}
    figures = {str(f.relative_to(repo)) for f in (repo / artifact("figures")).glob("*.png")}
    series = {str(f.relative_to(repo)) for live in ("li_vit_live", "spatial_live", "real_live")
              for f in (repo / artifact(live)).rglob("plots/metrics/**/*.tsv")}
    assert figures and all(kinds.get(path) == {"image"} for path in figures), sorted(figures - set(kinds))
    assert series and series <= set(kinds), sorted(series - set(kinds))


@pytest.mark.pipeline
def test_second_repro_does_nothing(repo):
    run = _dvc("repro", cwd=repo)
    assert "Running stage" not in run.stdout
    assert "Data and pipelines are up to date" in run.stdout
    assert _dvc("status", "-q", cwd=repo, check=False).returncode == 0


# A matrix's runs share their code: one run per model class is enough to show that it reproduces.
FORCED = [name for name in STAGES if name not in ("train_real@vit-permuted", "train_real@vit_positional-natural",
                                                  "train_real@cnn-permuted")]


@pytest.mark.pipeline
def test_forced_rerun_gives_the_same_bytes(repo):
    """Same params, same seeds, same bytes: each stage's command run again (of a matrix, one run per model
    class) rewrites outputs that hash as dvc.lock records. The commands run without DVC, whose rewriting
    of dvc.lock after each stage would double this test's time; `dvc status` then compares every hash."""
    logged = {path.name: len(path.read_text().splitlines()) for path in (repo / TIMINGS).glob("*.jsonl")}
    for name in FORCED:
        _run([sys.executable, *STAGES[name]["cmd"].split()[1:]], repo)
    status = _dvc("status", cwd=repo)
    assert "up to date" in status.stdout, status.stdout
    for path in (repo / TIMINGS).glob("*.jsonl"):  # every stage ran: each logged its wall clock again
        assert len(path.read_text().splitlines()) > logged[path.name], path.name
    timings = (repo / TIMINGS / "train_li_vit.jsonl").read_text().splitlines()
    last = json.loads(timings[-1])
    assert last["seconds"] > 0 and last["stage"] == "train_li_vit"  # wall clock: logged, not tracked
    assert _run(["git", "check-ignore", "-q", str(TIMINGS / "train_li_vit.jsonl")], repo, check=False).returncode == 0


@pytest.mark.pipeline
def test_bad_param_fails_with_one_line_and_keeps_outputs(repo):
    params_path = repo / "params.yaml"
    original = params_path.read_text()
    model = repo / artifact("li_vit") / "seed_0" / "model.safetensors"
    before = model.read_bytes(), (repo / artifact("report")).read_bytes()
    params = yaml.safe_load(original)
    set_value_at(params, "train.li_vit.lr_mlp", -1)
    params_path.write_text(yaml.safe_dump(params, sort_keys=False))
    try:
        run = _dvc("repro", cwd=repo, check=False)
    finally:
        params_path.write_text(original)
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert run.returncode != 0
    assert errors == ["error: params.yaml: train.li_vit.lr_mlp = -1.0 is not allowed: must be > 0"]
    assert "Traceback" not in run.stderr
    assert (model.read_bytes(), (repo / artifact("report")).read_bytes()) == before
    assert _dvc("status", "-q", cwd=repo, check=False).returncode == 0


def test_a_stage_with_a_missing_input_says_what_to_run(tmp_path):
    """No traceback: one line naming the missing file and the stage that makes it, exit code 2."""
    shutil.copy(ROOT / "params.yaml", tmp_path)
    run = subprocess.run([sys.executable, "-m", "stages.train_li_vit"], cwd=tmp_path, capture_output=True, text=True,
                         env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert run.returncode == 2
    missing = artifact("li_tokens") / "train.safetensors"
    assert run.stderr.strip().splitlines()[-1] == f"error: {missing}: missing; run `dvc repro generate` to rebuild it"
    assert "Traceback" not in run.stderr
    assert not (tmp_path / artifact("li_vit")).exists()


def _verify(repo):
    return _run([sys.executable, "-m", "vitheory.verify"], repo, check=False)


@pytest.mark.pipeline
def test_verify_agrees_with_a_fresh_run(repo):
    run = _verify(repo)
    assert run.returncode == 0, run.stdout  # consistent, whatever the verdicts
    assert "problem:" not in run.stdout
    for claim_id in CLAIM_IDS:
        assert claim_id in run.stdout
    assert "DIFFERS" not in run.stdout
    verdicts = json.loads((repo / artifact("verdicts")).read_text())
    strict = _run([sys.executable, "-m", "vitheory.verify", "--strict"], repo, check=False)
    assert strict.returncode == (0 if {verdicts[c] for c in CLAIM_IDS} == {HOLDS} else 1), strict.stdout


@pytest.mark.pipeline
def test_verify_against_a_revision_agrees_and_catches_a_planted_difference(repo):
    """A rerun compared with committed results: the same run agrees; a committed number moved beyond its
    tolerance (the larger half-width of the two intervals) is named, claim and quantity."""
    _run(["git", "add", "-A"], repo)
    _run(["git", "commit", "-qm", "results", "--allow-empty"], repo)
    agreeing = _run([sys.executable, "-m", "vitheory.verify", "--against", "HEAD"], repo, check=False)
    assert agreeing.returncode == 0 and "agrees with HEAD" in agreeing.stdout, agreeing.stdout
    path = repo / artifact("claims")
    original = path.read_text()
    stored = json.loads(original)
    record = stored["claims"][0]
    criterion, check = next(iter(record["criteria"].items()))
    quantity = check["quantity"]
    low, high = check["interval"]
    record["measured"][quantity] += 10 * (1 + abs(high - low))
    path.write_text(json.dumps(stored))
    _run(["git", "commit", "-qam", "planted"], repo)
    path.write_text(original)
    try:
        planted = _run([sys.executable, "-m", "vitheory.verify", "--against", "HEAD"], repo, check=False)
    finally:
        _run(["git", "reset", "-q", "--hard", "HEAD~1"], repo)
    assert planted.returncode == 2
    assert f"problem: {record['id']}: {quantity} = " in planted.stdout and "beyond the tolerance" in planted.stdout


def _verified_after_retraining_under(repo: Path, env: dict[str, str], *repros: tuple[str, ...]) -> None:
    """Commit the results, run `repros` (dvc repro argument lists) under `env`, and check that they trained
    `train_li_vit` to other bytes and that verify --against the commit agrees on every verdict and number;
    the commit's outputs are restored whatever happens."""
    _run(["git", "add", "-A"], repo)
    _run(["git", "commit", "-qm", "results", "--allow-empty"], repo)
    model = repo / artifact("li_vit") / "seed_0" / "model.safetensors"
    before = model.read_bytes()
    try:
        for args in repros:
            _run([sys.executable, "-m", "dvc", "repro", *args], repo, env=env)
        assert model.read_bytes() != before, f"{env} trained to our bytes: it simulates nothing"
        against = _run([sys.executable, "-m", "vitheory.verify", "--against", "HEAD"], repo, check=False)
    finally:
        _run(["git", "reset", "-q", "--hard", "HEAD"], repo)
        _dvc("checkout", "-f", cwd=repo)
    assert against.returncode == 0 and "agrees with HEAD" in against.stdout, against.stdout
    assert _dvc("status", "-q", cwd=repo, check=False).returncode == 0


@pytest.mark.pipeline
def test_verify_against_agrees_on_every_verdict_after_retraining_on_a_simulated_second_machine(repo):
    """Another CPU trains to other bytes (issue 45); its verdicts must be ours and its numbers within their
    tolerance. Simulated by ATen's default kernels in place of the pinned AVX2 ones: `train_li_vit` reruns
    (its weights move), then every stage downstream of it, and verify compares the claims with the commit."""
    _verified_after_retraining_under(repo, {"ATEN_CPU_CAPABILITY": "default"}, ("-f", "-s", "train_li_vit"), ())


@pytest.mark.pipeline
def test_the_portable_numerics_rerun_the_whole_pipeline_to_the_same_verdicts(repo):
    """The opt-in for a DVC cache shared across CPU vendors (MKL's COMPATIBLE branch, issue 52) against the
    default (MKL's AUTO): every stage rerun under it trains to other bytes and the same verdicts."""
    _verified_after_retraining_under(repo, vitheory.PORTABLE_NUMERICS, ("-f",))


@contextlib.contextmanager
def _faulty(target: Path, edit):
    """`target` rewritten by `edit(bytes) -> bytes`, or deleted when edit is None; restored afterwards."""
    original = target.read_bytes()
    try:
        if edit is None:
            target.unlink()
        else:
            target.write_bytes(edit(original))
        yield
    finally:
        target.write_bytes(original)


def _flip_verdict_and_move_a_number(claim_id: str, other_claim_id: str, quantity: str):
    """Flips one claim's stored verdict and moves a described number of another (no criterion reads it)."""
    def tamper(text: str) -> str:
        stored = json.loads(text)
        record = next(c for c in stored["claims"] if c["id"] == claim_id)
        record["verdict"] = {HOLDS: FAILS, FAILS: HOLDS, INCONCLUSIVE: HOLDS}[record["verdict"]]
        next(c for c in stored["claims"] if c["id"] == other_claim_id)["measured"][quantity] += 0.01
        return json.dumps(stored)
    return tamper


def _drop_last_row(text: str) -> str:
    return "\n".join(text.splitlines()[:-1]) + "\n"


def _lower_a_stored_accuracy(text: str) -> str:
    stored = json.loads(text)
    stored["runs"]["seed_0"]["test_accuracy"] -= 0.01
    return json.dumps(stored)


# Each is caught alone; planted together, on artifacts that no two of them read, one verify run must
# name them all. JSL-3 reads only the control stage's metrics, which none of the others touch.
TAMPERINGS = [
    (artifact("claims"), _flip_verdict_and_move_a_number("JSL-3", "LI-3", "all_query_cap"), "JSL-3: verdict "),
    (artifact("sparsify_runs"), _drop_last_row, "stage sparsify is out of date"),
    (artifact("phase_metrics"), None, f"{artifact('phase_metrics')}: missing; run `dvc repro phase_fit`"),
    (artifact("real_metrics") / "vit_natural.json", _lower_a_stored_accuracy, "seed_0's test accuracy"),
    (artifact("pk_train_runs"), _drop_last_row, "stage pk_train is out of date"),
]


@pytest.mark.pipeline
def test_verify_names_everything_that_was_tampered_with(repo):
    with contextlib.ExitStack() as stack:
        for path, edit, _ in TAMPERINGS:
            stack.enter_context(_faulty(repo / path, edit and (lambda data, edit=edit: edit(data.decode()).encode())))
        run = _verify(repo)
    assert run.returncode == 2
    problems = [line for line in run.stdout.splitlines() if line.startswith("problem:")]
    for _, _, expected in TAMPERINGS:
        assert any(expected in line for line in problems), (expected, run.stdout)
    assert any(line.startswith("problem: LI-3: all_query_cap = ") for line in problems), run.stdout  # named, not "differs"


def _truncate(data: bytes) -> bytes:
    return data[:-100]


def _flip_last_byte(data: bytes) -> bytes:
    """Still a readable safetensors file: one tensor value changed."""
    return data[:-1] + bytes([data[-1] ^ 0xFF])


def _widen_config(data: bytes) -> bytes:
    config = json.loads(data)
    config["config"]["width"] *= 2
    return json.dumps(config).encode()


CHECKPOINT = artifact("real_models") / "vit_natural" / "seed_0"
ARTIFACT_FAULTS = {
    "truncated safetensors": (f"{CHECKPOINT}/model.safetensors", _truncate,
                              f"{CHECKPOINT}/model.safetensors: not a readable safetensors file"),
    "config not matching tensors": (f"{CHECKPOINT}/config.json", _widen_config,
                                    f"{CHECKPOINT}/model.safetensors: tensors do not match config.json"),
    "missing data file": (artifact("images") / "test.safetensors", None,
                          f"{artifact('images') / 'test.safetensors'}: missing; run `dvc repro prepare_images`"),
}


@pytest.mark.pipeline
@pytest.mark.parametrize("fault", sorted(ARTIFACT_FAULTS))
def test_a_bad_artifact_is_one_line_from_verify_and_from_the_stage_that_reads_it(repo, fault):
    path, edit, expected = ARTIFACT_FAULTS[fault]
    with _faulty(repo / path, edit):
        verified = _verify(repo)
        stage = _run([sys.executable, "-m", *STAGES["sparsify_real"]["cmd"].split()[2:]], repo, check=False)
    assert verified.returncode == 2 and expected in verified.stdout, verified.stdout
    assert "Traceback" not in verified.stdout + verified.stderr
    assert stage.returncode == 2 and "Traceback" not in stage.stderr, stage.stderr
    errors = [line for line in stage.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and expected in errors[0], stage.stderr


@pytest.mark.pipeline
def test_verify_names_an_edited_but_readable_checkpoint(repo):
    target = repo / CHECKPOINT / "model.safetensors"
    original = target.read_bytes()
    try:
        target.write_bytes(_flip_last_byte(original))
        run = _verify(repo)
    finally:
        target.write_bytes(original)
    assert run.returncode == 2
    assert "stage train_real@vit-natural is out of date" in run.stdout and "vit_natural" in run.stdout


def _commit_and_clone(repo, tmp_path):
    """The run committed, and a fresh clone of it (no DVC cache)."""
    _run(["git", "add", "-A"], repo)
    _run(["git", "commit", "-qm", "results", "--allow-empty"], repo)
    _run(["git", "clone", "-q", str(repo), str(tmp_path / "clone")], tmp_path)
    return tmp_path / "clone"


def _pull_and_verify(clone, *remote):
    """`dvc pull`: nothing is out of date and verify passes."""
    _dvc("pull", *remote, cwd=clone)
    assert _dvc("status", "-q", cwd=clone, check=False).returncode == 0
    run = _verify(clone)
    assert run.returncode == 0 and "problem:" not in run.stdout, run.stdout


@pytest.mark.pipeline
def test_remote_round_trip_needs_no_recomputation(repo, tmp_path):
    """push to a local DVC remote, clone afresh, pull: verify passes and nothing is out of date."""
    remote = tmp_path / "remote"
    _dvc("remote", "add", "--local", "-f", "storage", str(remote), cwd=repo)
    clone = _commit_and_clone(repo, tmp_path)
    _dvc("push", "-r", "storage", cwd=repo)
    _dvc("remote", "add", "--local", "storage", str(remote), cwd=clone)
    _pull_and_verify(clone, "-r", "storage")


@pytest.mark.pipeline
def test_the_bundle_of_the_committed_run_needs_no_recomputation(repo, tmp_path):
    """`python -m vitheory.bundle make` where the run was made; in a fresh clone, `use` it and `dvc pull`:
    verify passes and nothing is out of date. The tar is git-ignored where it is made."""
    clone = _commit_and_clone(repo, tmp_path)
    _run([sys.executable, "-m", "vitheory.bundle", "make"], repo)
    tar = repo / f"vitheory-run-{_run(['git', 'rev-parse', 'HEAD'], repo).stdout.strip()[:12]}.tar"
    assert not _run(["git", "status", "--porcelain", "--", tar.name, f"{tar.name}.sha256"], repo).stdout
    shutil.move(tar, tmp_path)  # the reviewer's download
    shutil.move(f"{tar}.sha256", tmp_path)
    used = _run([sys.executable, "-m", "vitheory.bundle", "use", str(tmp_path / tar.name)], clone)
    assert used.stdout.strip().endswith("now: `dvc pull && python -m vitheory.verify`"), used.stdout
    _pull_and_verify(clone)
    assert not _run(["git", "status", "--porcelain"], clone).stdout  # the bundle's folder and remote: ignored


METRICS = {str(artifact("verdicts")), str(artifact("measured"))}
# the README's recipe for a table of verdicts: `dvc exp show --drop ... --keep ...  # each experiment's verdicts`
EXP_SHOW_RECIPE = next(shlex.split(line.split("#")[0])[3:] for line in (ROOT / "README.md").read_text().splitlines()
                       if line.startswith("dvc exp show --drop") and line.endswith("# each experiment's verdicts"))


@pytest.mark.pipeline
def test_queued_sweep_runs_every_value_and_shows_the_claim_metrics(repo):
    """`dvc exp run --queue -S 'key=v1,v2'`, one worker, then `dvc exp show` lists each run's verdicts and
    deciding numbers, and the changed param changed the claim's number. The first value is the committed
    one: its experiment reruns nothing and shows the committed numbers."""
    _run(["git", "add", "-A"], repo)
    _run(["git", "commit", "-qm", "before sweep", "--allow-empty"], repo)
    committed = json.loads((repo / artifact("measured")).read_text())["LI-3"]["final"]
    steps = json.loads((repo / artifact("li_vit_metrics")).read_text())["steps"]
    _dvc("exp", "run", "--queue", "-S", f"train.li_vit.steps={steps},{steps + 20}", cwd=repo)
    _dvc("queue", "start", "-j", "1", cwd=repo)
    _wait_for_the_queue(repo, 2, 120)
    shown = json.loads(_dvc("exp", "show", "--json", cwd=repo).stdout)
    mass_by_steps = {}
    for baseline in shown:
        for exp in baseline.get("experiments") or []:
            for rev in exp["revs"]:
                data = rev.get("data") or {}
                assert METRICS <= set(data.get("metrics", {}))  # the verdicts and deciding numbers among them
                mass = data["metrics"][str(artifact("measured"))]["data"]["LI-3"]["final"]
                mass_by_steps[data["params"]["params.yaml"]["data"]["train"]["li_vit"]["steps"]] = mass
    assert set(mass_by_steps) == {steps, steps + 20}
    assert mass_by_steps[steps] == committed != mass_by_steps[steps + 20]


def _wait_for_the_queue(repo: Path, runs: int, seconds: int) -> None:
    """Until no experiment is queued or running, at most `seconds`; then `runs` of them succeeded."""
    for _ in range(seconds):
        status = _dvc("queue", "status", cwd=repo).stdout
        if "Queued" not in status and "Running" not in status:
            break
        time.sleep(1)
    assert status.count("Success") == runs, status


@pytest.mark.pipeline
def test_the_atlas_of_a_three_point_grid_has_every_claim_at_every_point(repo, tmp_path):
    """README, "The atlas": a grid of one cheap [LI23] knob (the default and two more values),
    `python -m vitheory.atlas queue`, `dvc queue start -j 1`, `python -m vitheory.atlas table`: the table
    holds every claim at every point, each point's numbers from its own experiment, and the figure; then
    nothing is left to queue, and `dvc repro report` puts each claim's "where it holds" in REPORT.md."""
    copy = _copy(repo, tmp_path)
    shutil.rmtree(copy / ".dvc" / "tmp" / "exps", ignore_errors=True)  # the sweep test's queue and workers
    params = yaml.safe_load((copy / "params.yaml").read_text())
    knob = "generate.li_tokens.noise_radius"
    default = params["generate"]["li_tokens"]["noise_radius"]
    values = [default, round(2 * default, 6), round(3 * default, 6)]
    params[ATLAS]["knobs"] = {knob: values}
    (copy / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    _run(["git", "add", "-A"], copy)
    _run(["git", "commit", "-qm", "the atlas's grid"], copy)
    atlas = [sys.executable, "-m", "vitheory.atlas"]
    _run([*atlas, "queue"], copy)
    _dvc("queue", "start", "-j", "1", cwd=copy)
    _wait_for_the_queue(copy, 2, 600)
    committed = (copy / artifact("atlas_table")).read_bytes()
    refused = _run([*atlas, "table"], copy, check=False)  # the committed table's points are off this grid
    assert refused.returncode == 2 and "pass --fewer to cut them" in refused.stderr, refused.stderr
    assert (copy / artifact("atlas_table")).read_bytes() == committed
    made = _run([*atlas, "table", "--fewer"], copy).stdout
    assert "every point of the grid ran" in made, made
    with open(copy / artifact("atlas_table"), newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == list(ATLAS_COLUMNS)
    points = {(row["claim"], float(row["value"]), row["default"]) for row in rows}
    assert points == {(claim, value, str(value == default).lower()) for claim in CLAIM_IDS for value in values}
    li3 = {}
    for row in rows:
        if row["claim"] == "LI-3":
            li3.setdefault(float(row["value"]), []).append(row["measured"])
    assert len({tuple(measured) for measured in li3.values()}) == len(values), li3  # each point's own run
    assert (copy / artifact("atlas_figure")).read_bytes()[:4] == b"\x89PNG"
    assert _run([*atlas, "queue", "--dry"], copy).stdout == ""  # a finished point is never queued again
    _dvc("repro", "report", cwd=copy)
    assert (copy / artifact("report")).read_text().count("*Where it holds*") == len(CLAIM_IDS)


@pytest.mark.pipeline
def test_exp_show_recipe_fits_the_verdicts_in_120_columns(repo):
    """The README's recipe: every paper's verdicts as a column, whole, in a terminal 120 characters wide."""
    shown = _run([sys.executable, "-m", "dvc", "exp", "show", "--no-pager", *EXP_SHOW_RECIPE], repo,
                 env={"COLUMNS": "120"}).stdout
    assert max(map(len, shown.splitlines())) <= 120 and "…" not in shown, shown
    verdicts = json.loads((repo / artifact("verdicts")).read_text())
    assert all(paper.key in shown and verdicts[paper.key] in shown for paper in PAPERS), shown


def _snapshot(root: Path) -> dict[str, str]:
    """sha256 of every file of the pipeline's outputs; temporary names, resumable state and the
    wall-clock log aside."""
    files = [f for top in ("data", "models", "reports") for f in (root / top).rglob("*")
             if f.is_file() and not {"resume", "timings"} & set(f.relative_to(root).parts)
             and not any(part.endswith((".tmp", ".old")) for part in f.parts)]
    return {str(f.relative_to(root)): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


def _children() -> dict[int, list[int]]:
    """Every live process's children, from /proc."""
    tree: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if fields[0] != "Z":
                tree.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return tree


def _descendants(pid: int) -> list[int]:
    tree, found, todo = _children(), [], [pid]
    while todo:
        children = tree.get(todo.pop(), [])
        found += children
        todo += children
    return sorted(found)


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for a parent to reap it."""
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return False


def _stage_process(dvc_pid: int) -> int:
    """The `python -m stages.train_real ...` process that `dvc` started (not the shell around it)."""
    for pid in _descendants(dvc_pid):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1:3] == [b"-m", b"stages.train_real"]:
                return pid
    raise AssertionError("no stage process found")


def _saved_epoch(state: Path, run: str) -> int | None:
    """The epoch `run`'s resume state holds, or None where its tensors and sidecar disagree: a kill
    that lands between a save's two writes tears it, and the rerun discards it with a warning."""
    tensors = load_file(str(state / f"{run}.safetensors"))
    sidecar = json.loads((state / f"{run}.json").read_text())["epoch"]
    return sidecar if int(tensors["epoch"]) == sidecar else None


def _expect_resumed(stderr: str, state_epochs: dict[int, int | None]) -> None:
    """Each seed whose state the kill left whole resumes after its saved epoch; a torn one is discarded."""
    for seed, epoch in state_epochs.items():
        expected = (f"seed {seed}: resuming after epoch {epoch} of 240" if epoch is not None
                    else f"seed_{seed}: resume state inconsistent")
        assert expected in stderr, f"seed {seed}: expected {expected!r}"


def _start_long_training(repo: Path, tmp_path: Path) -> tuple[Path, str, Path, dict, str, subprocess.Popen]:
    """A copy of `repo` where train_real@cnn-natural runs 240 epochs, its uninterrupted outputs and
    lock recorded; then that run forgotten (the earlier lock back, the run-cache emptied), so that the
    setting is new again, as an interrupted experiment's is, and a rerun started in its own session and
    left once seeds 0 and 1 (trained side by side by the two workers) have both saved an epoch.
    (Unforgotten, a rerun after the kill would restore the finished run's outputs from the run-cache or
    the lock instead of resuming: nothing to test.)"""
    copy = tmp_path / "repo"
    shutil.copytree(repo, copy, symlinks=True, ignore=shutil.ignore_patterns("tmp"))
    earlier_lock = (copy / "dvc.lock").read_text()
    params = yaml.safe_load((copy / "params.yaml").read_text())
    set_value_at(params, "real.epochs", 240)  # long enough (seconds) to be killed, and raced, in the middle
    (copy / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    stage, state = "train_real@cnn-natural", copy / artifact("real_resume") / "cnn_natural"
    _dvc("repro", stage, cwd=copy)
    uninterrupted, lock = _snapshot(copy), (copy / "dvc.lock").read_text()
    (copy / "dvc.lock").write_text(earlier_lock)
    shutil.rmtree(copy / ".dvc" / "cache" / "runs")
    env = os.environ | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    started = subprocess.Popen([sys.executable, "-m", "dvc", "repro", "-s", stage], cwd=copy, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    saved = (state / "seed_0.json", state / "seed_1.json")
    while not all(map(Path.exists, saved)) and started.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert started.poll() is None, "the stage ended before the kill"
    return copy, stage, state, uninterrupted, lock, started


@pytest.mark.pipeline
def test_a_killed_training_stage_resumes_to_the_same_bytes(repo, tmp_path):
    """Kill `dvc repro` (its whole process group, as Ctrl-C does) mid-training, rerun: same artifacts,
    nothing lost."""
    copy, stage, state, uninterrupted, lock, killed = _start_long_training(repo, tmp_path)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    assert json.loads((state / "state.json").read_text())["complete"] is False, "the stage ended before the kill"
    interrupted = _verify(copy)
    assert interrupted.returncode == 2 and f"stage {stage} is out of date" in interrupted.stdout
    saved = {seed: _saved_epoch(state, f"seed_{seed}") for seed in (0, 1)}
    assert any(epoch is not None for epoch in saved.values()), "the kill tore both seeds' states: nothing resumes"

    rerun = _dvc("repro", stage, cwd=copy)
    _expect_resumed(rerun.stderr, saved)
    assert (copy / "dvc.lock").read_text() == lock
    assert _snapshot(copy) == uninterrupted
    assert _dvc("status", stage, "-q", cwd=copy, check=False).returncode == 0


@pytest.mark.pipeline
def test_killing_only_the_stage_process_takes_its_workers_and_a_torn_state_is_retrained(repo, tmp_path):
    """SIGKILL to the stage's own process (as the OOM killer would): within seconds none of its
    workers is alive; one seed's state cut in half is retrained with a warning; the rerun ends with
    the uninterrupted bytes and a clean `dvc status`."""
    copy, stage, state, uninterrupted, lock, started = _start_long_training(repo, tmp_path)
    stage_process = _stage_process(started.pid)
    workers = _descendants(stage_process)
    assert workers, "the stage started no workers"
    os.kill(stage_process, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(_alive, workers)), "a worker outlived the stage"
    started.wait(timeout=60)
    seed_0 = state / "seed_0.safetensors"
    seed_0.write_bytes(seed_0.read_bytes()[:seed_0.stat().st_size // 2])
    saved = {1: _saved_epoch(state, "seed_1")}

    rerun = _dvc("repro", stage, cwd=copy)
    assert "seed_0: resume state unreadable" in rerun.stderr
    _expect_resumed(rerun.stderr, saved)
    assert (copy / "dvc.lock").read_text() == lock
    assert _snapshot(copy) == uninterrupted
    assert _dvc("status", stage, "-q", cwd=copy, check=False).returncode == 0


@pytest.mark.pipeline
def test_a_rerun_cannot_race_an_orphaned_stage(repo, tmp_path):
    """SIGKILL to `dvc` only leaves its stage running as an orphan: a new `dvc repro` of that stage
    stops at once on the stage's lock, naming the holder; the orphan ends with the uninterrupted
    bytes, and `dvc commit` records them in the lock file (a `dvc repro` would run the stage again:
    DVC never saw the orphan's run end)."""
    copy, stage, _, uninterrupted, lock, started = _start_long_training(repo, tmp_path)
    orphan = _stage_process(started.pid)
    os.kill(started.pid, signal.SIGKILL)
    started.wait()
    os.kill(orphan, signal.SIGSTOP)  # alive and holding its lock however slowly the second run starts
    try:
        second = _dvc("repro", stage, cwd=copy, check=False)
    finally:
        os.kill(orphan, signal.SIGCONT)
    assert second.returncode != 0
    assert f"error: stage {stage} is already running (pid {orphan} writes" in second.stderr
    deadline = time.monotonic() + 300
    while _alive(orphan) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _snapshot(copy) == uninterrupted
    _dvc("commit", "-f", stage, cwd=copy)
    assert (copy / "dvc.lock").read_text() == lock
    assert _snapshot(copy) == uninterrupted


# --- one place: a params edit reruns one paper; a new paper is its package, its stages and one line ----

TOY_FILES = {
    "vitheory/toy/__init__.py": '"""A toy paper: one claim over one raw table."""\n',
    "vitheory/toy/params.py": '''"""The toy paper's params."""

from dataclasses import dataclass

from vitheory.core.config import Section, at_least, knob


@dataclass(frozen=True)
class ToyParams(Section):
    seeds: int = knob(at_least(2))


SECTIONS = {"toy": ToyParams}
''',
    "vitheory/toy/claims.py": '''"""The toy paper's one claim, measured from its raw table."""

from pathlib import Path

from vitheory.core.artifacts import read_table
from vitheory.core.claims import SYNTHETIC, Claim, Criterion, Paper
from vitheory.core.intervals import MEAN
from vitheory.core.paths import artifact


def _samples(root: Path) -> dict:
    return {"toy": read_table(root / artifact("toy_runs"), {"seed": int, "value": float})}


PAPER = Paper(key="TOY", citation="A toy paper.", claims=(Claim(
    id="TOY-1", statement="The value is positive.", metric="mean value over seeds",
    criteria=(Criterion("mean_value", ">", 0.0, "paper: the toy theorem; the direction", MEAN),),
    evidence=(artifact("toy_runs"),), samples=_samples,
    statistics=lambda samples: {"mean_value": sum(unit["value"] for unit in samples["toy"]) / len(samples["toy"])},
    regime=lambda params: f"{params.toy.seeds} seeds.", data=SYNTHETIC),))
''',
    "vitheory/toy/package.py": '''"""The toy paper in the paper table."""

from vitheory.core.package import Package
from vitheory.toy import params
from vitheory.toy.claims import PAPER

PACKAGE = Package(name="toy", params=params.SECTIONS, paper=PAPER)
''',
    "stages/toy.py": '''"""Stage `toy`: the toy paper's raw table, one row per seed."""

import argparse

from vitheory.core.artifacts import write_table
from vitheory.core.cli import run_stage
from vitheory.core.paths import artifact
from vitheory.toy.params import ToyParams

PARAMS = {"toy": ToyParams}


def main(params, args: argparse.Namespace) -> None:
    write_table(artifact("toy_runs"), ["seed", "value"], ([seed, 1.0 + seed / 10] for seed in range(params.toy.seeds)))


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
''',
}


def _running(output: str) -> set[str]:
    return {line.split("'")[1] for line in output.splitlines() if line.startswith("Running stage")}


def _changed_files(repo: Path) -> set[str]:
    status = _run(["git", "status", "--porcelain", "--untracked-files=all"], repo).stdout
    return {line[3:] for line in status.splitlines() if line}


def _copy(repo: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, symlinks=True)
    return copy


@pytest.mark.pipeline
def test_a_setting_seen_before_is_restored_from_the_run_cache(repo, tmp_path):
    """`dvc exp run` away from a setting and back: the second visit runs no stage that computes (only
    check_params, and report, whose REPORT.md keeps it out of the run-cache) and restores the first
    visit's bytes."""
    copy = _copy(repo, tmp_path)
    shutil.rmtree(copy / ".dvc" / "cache" / "runs")  # no setting seen before (another test's sweep ran some)
    _run(["git", "add", "-A"], copy)
    _run(["git", "commit", "-qm", "before the experiments", "--allow-empty"], copy)
    steps = json.loads((copy / artifact("li_vit_metrics")).read_text())["steps"]
    first = _dvc("exp", "run", "-S", f"train.li_vit.steps={steps + 20}", cwd=copy)
    assert "train_li_vit" in _running(first.stdout), first.stdout
    visited = _snapshot(copy)
    _dvc("exp", "run", "-S", f"train.li_vit.steps={steps + 40}", cwd=copy)
    assert _snapshot(copy) != visited
    again = _dvc("exp", "run", "-S", f"train.li_vit.steps={steps + 20}", cwd=copy)
    assert _running(again.stdout) == {"check_params", "report"}, again.stdout
    assert "Stage 'train_li_vit' is cached - skipping run" in again.stdout, again.stdout
    assert _snapshot(copy) == visited


@pytest.mark.pipeline
def test_editing_one_papers_params_module_reruns_only_its_stages(repo, tmp_path):
    copy = _copy(repo, tmp_path)
    with open(copy / "vitheory/pk22/params.py", "a") as handle:
        handle.write("# an edit\n")
    status = json.loads(_dvc("status", "--json", cwd=copy).stdout)
    # the shared stages read every paper's table (check_params, render, report); they compute nothing
    assert set(status) == {"pk_train", "pk_analysis", "pk_landscape", "pk_frequency", "pk_locality",
                           "pk_locality_hessian", "pk_buildup", "check_params", "render", "report"}, sorted(status)


@pytest.mark.pipeline
def test_a_toy_paper_runs_through_report_and_verify_touching_only_its_own_files(repo, tmp_path):
    copy = _copy(repo, tmp_path)
    before = _changed_files(copy)
    for rel, text in TOY_FILES.items():
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_text(text)
    with open(copy / "params.yaml", "a") as handle:
        handle.write("toy:\n  seeds: 3\n")
    table = (copy / "vitheory/papers.py").read_text()
    table = table.replace("from vitheory.pk22.package import PACKAGE as PK22\n",
                          "from vitheory.pk22.package import PACKAGE as PK22\nfrom vitheory.toy.package import PACKAGE as TOY\n")
    (copy / "vitheory/papers.py").write_text(table.replace("IMAGES, PK22)", "IMAGES, PK22, TOY)"))
    pipeline = (copy / "dvc.yaml").read_text()
    pipeline = pipeline.replace("      report: reports/REPORT.md\n",
                                "      report: reports/REPORT.md\n      toy_runs: reports/toy/runs.csv\n")
    pipeline = pipeline.replace("  report:\n    cmd: python -m stages.report\n    deps:\n",
                                "  report:\n    cmd: python -m stages.report\n    deps:\n      - ${paths.toy_runs}\n")
    toy_stage = ("  toy:\n    cmd: python -m stages.toy\n    deps:\n      - stages/toy.py\n    params:\n      - toy\n"
                 "    plots:\n      - ${paths.toy_runs}:\n          cache: false\n\n")
    pipeline = pipeline.replace("  render:\n", toy_stage + "  render:\n", 1)
    (copy / "dvc.yaml").write_text(pipeline)
    _run([sys.executable, "-m", "vitheory.pipeline", "--fix"], copy)
    touched = _changed_files(copy) - before
    assert touched == {*TOY_FILES, "params.yaml", "dvc.yaml", "vitheory/papers.py"}, sorted(touched)
    run = _dvc("repro", cwd=copy)
    assert _running(run.stdout) == {"check_params", "toy", "render", "report"}, run.stdout
    toy = next(c for c in json.loads((copy / artifact("claims")).read_text())["claims"] if c["id"] == "TOY-1")
    assert toy["verdict"] == HOLDS and toy["measured"]["mean_value"] == pytest.approx(1.1)
    assert "TOY-1" in (copy / artifact("report")).read_text()
    verified = _verify(copy)
    assert verified.returncode == 0 and "problem:" not in verified.stdout, verified.stdout
    assert "TOY-1" in verified.stdout
