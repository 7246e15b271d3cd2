"""REPORT.md: the provenance line (the git commit the run used, and what differed from it) and the verdict table."""

import os
import subprocess
from pathlib import Path

from vitheory.report import source_revision


def _git(*args, cwd):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)


def test_source_revision_names_the_commit_and_uncommitted_code(tmp_path):
    assert source_revision(tmp_path) == "unknown (not a git checkout)"
    _git("init", "-q", cwd=tmp_path)
    (tmp_path / "vitheory").mkdir()
    (tmp_path / "vitheory" / "model.py").write_text("A = 1\n")
    (tmp_path / "notes.txt").write_text("not code\n")
    _git("add", "-A", cwd=tmp_path)
    _git("commit", "-qm", "code", cwd=tmp_path)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    (tmp_path / "notes.txt").write_text("edited, but not a source of results\n")
    assert source_revision(tmp_path) == f"`{head}`"
    (tmp_path / "vitheory" / "model.py").write_text("A = 2\n")
    (tmp_path / "params.yaml").write_text("lr: 1\n")
    assert source_revision(tmp_path) == f"`{head}`, with uncommitted changes to params.yaml, vitheory/model.py"


def test_the_verdict_table_names_each_claims_regime():
    from vitheory.params import load_params
    from vitheory.report import claims_table, regime_label

    params = load_params()
    assert regime_label(params) == f"cluttered digits, 8 x 8 ViT tokens, {params.real.seeds} seeds"  # the default regime
    record = {"paper": "PK22", "id": "PK-1", "verdict": "holds", "variants": {}, "measured": {"x": 1.0},
              "criteria": {"x > 0": {"quantity": "x", "interval": (0.5, 1.5), "threshold": "> 0",
                                     "source": "paper: the sign", "margin": 1.0}}}
    table = claims_table([record], {"PK-1": regime_label(params)})
    assert table[0].split(" | ")[7] == "regime"
    assert table[2].split(" | ")[7] == regime_label(params)


def _check(margin, interval, quantity="x"):
    return {"quantity": quantity, "interval": interval, "threshold": "> 0", "source": "paper: the sign", "margin": margin}


def test_a_criterion_is_marked_when_a_move_within_verifys_tolerance_can_flip_it():
    """Moved by its half-width (what verify --against accepts between machines), an interval crosses the
    threshold when |margin| < its width; a margin with a half-width to spare is left unmarked."""
    from vitheory.report import SPREAD_MARK, claims_table, within_spread

    assert not within_spread(_check(1.2, (0.7, 1.7)))  # holds, 0.7 above 0: more than h = 0.5 to spare
    assert within_spread(_check(0.8, (0.3, 1.3)))  # holds, but a move of 0.5 takes the interval to -0.2
    assert within_spread(_check(-0.1, (-0.6, 0.4)))  # inconclusive
    assert not within_spread(_check(-2.0, (-2.5, -1.5)))  # does not hold, by 1.5 to spare
    assert not within_spread(_check(None, (None, None)))  # unmeasured: inconclusive on any machine
    record = {"paper": "PK22", "id": "PK-1", "verdict": "holds", "variants": {}, "measured": {"x": 0.8, "y": 1.2},
              "criteria": {"x > 0": _check(0.8, (0.3, 1.3)), "y > 0": _check(1.2, (0.7, 1.7), "y")}}
    margins = claims_table([record], {"PK-1": "synthetic"})[2].split(" | ")[5]
    assert margins == f"0.8{SPREAD_MARK}<br>1.2"


def test_the_provenance_names_the_cpu_and_its_core_count():
    from vitheory.report import cpu_description

    described = cpu_description()
    assert f", {os.cpu_count()} cores, " in described
    cpuinfo = Path("/proc/cpuinfo")
    fields = dict(line.split(":", 1) for line in cpuinfo.read_text().splitlines()[::-1] if ":" in line) \
        if cpuinfo.is_file() else {}
    fields = {key.strip(): value.strip() for key, value in fields.items()}  # the first CPU's, read last
    if "vendor_id" in fields:  # x86 Linux: vendor, model, and the AVX flags the kernels follow
        assert described.startswith(f"{fields['vendor_id']} {fields['model name']}, ")
        assert ("avx2" in described.split("flags")[1]) == ("avx2" in fields["flags"].split())


def test_every_claims_regime_is_said_from_the_default_and_the_quick_params(default_params, quick_params):
    """The report states each claim's regime from the run's params (report.py calls `claim.regime` for every
    claim): a regime text that breaks stops the report stage, which only the end-to-end tests would see
    (13 such mutants of li23/claims.py survived, docs/MUTATION.md)."""
    from vitheory.papers import PAPERS

    for params in (default_params, quick_params):
        for claim in (claim for paper in PAPERS for claim in paper.claims):
            said = claim.regime(params)
            assert isinstance(said, str) and len(said) > 20, f"{claim.id}: {said!r}"
