"""REPORT.md: the provenance line (the git commit the run used, and what differed from it) and the verdict table."""

import subprocess

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
    assert regime_label(params) == "cluttered digits, 8 x 8 ViT tokens, 5 seeds"  # the default regime
    record = {"paper": "PK22", "id": "PK-1", "verdict": "holds", "variants": {}, "measured": {"x": 1.0},
              "criteria": {"x > 0": {"interval": (0.5, 1.5), "threshold": "> 0", "source": "paper: the sign",
                                     "margin": 1.0}}}
    table = claims_table([record], {"PK-1": regime_label(params)})
    assert table[0].split(" | ")[7] == "regime"
    assert table[2].split(" | ")[7] == "cluttered digits, 8 x 8 ViT tokens, 5 seeds"
