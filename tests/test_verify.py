"""verify's verdict on a repository: consistent (0), inconsistent (2, naming the file) or not built (3, DVC's
outputs absent, as in a fresh clone), on a two-stage DVC pipeline that builds in a second."""

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import ROOT
from test_pipeline import fresh_clone, run_and_commit

from vitheory import verify
from vitheory.core.artifacts import read_json
from vitheory.core.errors import ArtifactError, ParamsError
from vitheory.core.paths import artifact
from vitheory.core.rederive import Problem
from vitheory.verify import CONSISTENT, INCONSISTENT, NOT_BUILT, ClaimCheck, _entries, _in_words

# a DVC-cached output (data/, as the checkpoints are) and a git-tracked metrics record computed from it
PIPELINE = """\
stages:
  make:
    cmd: python -c "import pathlib; pathlib.Path('data').mkdir(); pathlib.Path('data/x.json').write_text('7')"
    outs:
      - data
  measure:
    cmd: python -c "import json; json.dump(dict(x=json.load(open('data/x.json'))), open('reports/metrics/m.json', 'w'))"
    deps:
      - data
    metrics:
      - reports/metrics/m.json:
          cache: false
"""
# the stage times verify reads a rebuild's cost from: `make` took 2 minutes
STAGE_TIMES = """\
- {stage: make, seconds: 120.0, finished: '2026-01-01T00:00:00+00:00', cores: 2, load: {start: 0.1, mean: 1.0, max: 1.2}}
- {stage: measure, seconds: 0.5, finished: '2026-01-01T00:00:01+00:00', cores: 2, load: {start: 0.1, mean: 0.1, max: 0.1}}
"""


def _reads_data(root):
    """A re-derivation from the DVC-cached output, as the checkpoint checks are."""
    read_json(root / "data/x.json")
    return []


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The two-stage pipeline, run and committed (its DVC cache holds data/)."""
    repo = tmp_path_factory.mktemp("built")
    (repo / "dvc.yaml").write_text(PIPELINE)
    (repo / "docs").mkdir()
    (repo / "docs/stage_times.yaml").write_text(STAGE_TIMES)
    (repo / "reports/metrics").mkdir(parents=True)
    (repo / "reports/claims.json").write_text('{"claims": []}\n')
    shutil.copy(ROOT / "params.yaml", repo)
    return run_and_commit(repo)


@pytest.fixture
def clone(built, tmp_path):
    """A fresh clone: what git holds, no DVC cache."""
    return fresh_clone(built, tmp_path)


def _main(repo, monkeypatch, capsys, *args):
    monkeypatch.chdir(repo)
    monkeypatch.setattr(verify, "PAPERS", ())
    monkeypatch.setattr(verify, "PACKAGES", (SimpleNamespace(checks=(_reads_data,)),))
    code = verify.main(list(args))
    printed = capsys.readouterr().out.splitlines()
    assert all(len(line) <= verify.WIDTH for line in printed), max(printed, key=len)
    lines = []  # each said line whole again: a continuation is indented
    for line in printed:
        if line.startswith("  ") and lines:
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    return code, lines


def test_a_built_consistent_repository_exits_0(built, monkeypatch, capsys):
    code, lines = _main(built, monkeypatch, capsys)
    assert code == CONSISTENT, lines
    assert not any(line.startswith(("problem:", "not built:")) for line in lines)


def test_a_fresh_clone_is_not_built_in_one_line_with_commands_that_work_without_a_cache(clone, monkeypatch, capsys):
    code, lines = _main(clone, monkeypatch, capsys)
    assert code == NOT_BUILT, lines
    assert not any(line.startswith("problem:") for line in lines)
    [said] = [line for line in lines if line.startswith("not built:")]
    assert "1 stages' outputs in data/ are absent (_reads_data unchecked)" in said
    assert "`dvc pull`" in said and "`dvc repro` (~2 min, docs/REVIEWING.md)" in said  # make's 120 s
    assert "checkout" not in said and "a bundle" in said and len(said) < 200


def test_an_edited_committed_number_is_inconsistent_and_names_the_file(clone, monkeypatch, capsys):
    record = clone / "reports/metrics/m.json"
    record.write_text(json.dumps({"x": 8}))
    code, lines = _main(clone, monkeypatch, capsys)
    assert code == INCONSISTENT, lines
    [problem] = [line for line in lines if line.startswith("problem:")]
    assert "stage measure is out of date (changed outs: reports/metrics/m.json (modified))" in problem
    assert "`git checkout -- reports/metrics/m.json`" in problem and len(problem) < 160
    assert any(line.startswith("not built:") for line in lines)  # still said: data/ is absent too


def test_outputs_in_the_cache_but_not_checked_out_are_restored_by_checkout(built, monkeypatch, capsys):
    shutil.move(built / "data", built / "elsewhere")
    try:
        code, lines = _main(built, monkeypatch, capsys)
    finally:
        shutil.move(built / "elsewhere", built / "data")
    assert code == NOT_BUILT and lines[-1].endswith("`dvc checkout` restores them from DVC's cache"), lines


def test_a_modified_cached_output_is_inconsistent_and_restored_from_the_cache(built, monkeypatch, capsys):
    target = built / "data/x.json"
    target.chmod(0o644)  # DVC links cached files read-only
    original = target.read_text()
    target.unlink()
    target.write_text("8")
    try:
        code, lines = _main(built, monkeypatch, capsys)
    finally:
        target.unlink()
        target.write_text(original)
    assert code == INCONSISTENT, lines
    assert any("stage make is out of date" in line and "`dvc checkout --force make`" in line for line in lines)


def test_help_lists_every_exit_code(capsys):
    with pytest.raises(SystemExit):
        verify.main(["--help"])
    shown = capsys.readouterr().out
    assert shown.startswith("usage: python -m vitheory.verify")
    for code in (CONSISTENT, 1, INCONSISTENT, NOT_BUILT):
        assert f"\n  {code}  " in shown


def test_dvc_status_is_said_in_words_not_as_a_python_repr():
    entries = [entry for change in [{"changed deps": {"params.yaml": "modified"}},
                                    {"changed outs": {"data/a": "deleted"}}, "always changed"]
               for entry in _entries(change)]
    said = _in_words(entries)
    assert said == "changed deps: params.yaml (modified); changed outs: data/a (deleted); always changed"
    assert "{" not in said and "'" not in said


def test_the_table_and_a_rerun_comparison_take_each_quantity_from_its_check_not_its_label():
    """A label that does not begin with its quantity still names the right number, here and against
    another revision's record."""
    check = {"quantity": "gain", "threshold": "> 0", "interval": [0.1, 0.3], "verdict": "holds"}
    record = {"id": "T-1", "verdict": "holds", "measured": {"gain": 0.2}, "criteria": {"> 0, measured as gain": check},
              "conditions": {}}
    other = {**record, "measured": {"gain": 5.0}}
    assert verify.disagreements(record, other, "main") == ([
        Problem(artifact("claims"), "T-1: gain = 0.2 here, 5 at main: differs by 4.8, beyond the tolerance 0.1")], [])
    assert verify.disagreements(record, record, "main") == ([], [])
    assert "gain = 0.2 [0.1, 0.3] (> 0)" in verify._table([ClaimCheck("T-1", record, agrees=True)])


def test_a_verdict_that_flips_with_its_numbers_within_their_intervals_is_a_move_not_an_inconsistency():
    """Issue 65: a rerun elsewhere whose interval crosses the threshold where the committed one did not moved;
    the same flip with a number beyond its tolerance is a problem, both said."""
    check = {"quantity": "gain", "threshold": "> 0", "interval": [0.01, 0.21], "verdict": "holds"}
    here = {"id": "T-1", "verdict": "holds", "measured": {"gain": 0.11}, "criteria": {"gain > 0": check},
            "conditions": {}}
    there = {**here, "verdict": "inconclusive", "measured": {"gain": 0.05},
             "criteria": {"gain > 0": {**check, "interval": [-0.05, 0.15], "verdict": "inconclusive"}}}
    assert verify.disagreements(here, there, "main") == ([], [
        "moved: T-1: holds here, inconclusive at main, every deciding number within its tolerance (a move within "
        "the intervals, not an inconsistency)"])
    far = {**there, "measured": {"gain": -0.5}}
    problems, moves = verify.disagreements(here, far, "main")
    assert moves == [] and [p.text for p in problems] == [
        "T-1: holds here, inconclusive at main",
        "T-1: gain = 0.11 here, -0.5 at main: differs by 0.61, beyond the tolerance 0.1"]


def test_against_a_revision_in_an_unbuilt_clone_is_not_built_and_never_verified(clone, monkeypatch, capsys):
    """Unbuilt, the claims come from the committed tables: comparing them with a commit compares the
    commit with itself, so nothing is verified."""
    code, lines = _main(clone, monkeypatch, capsys, "--against", "HEAD")
    assert code == NOT_BUILT, lines
    assert any(line.startswith("nothing built to compare with HEAD") for line in lines)
    assert not any("verified" in line for line in lines), lines


def test_a_re_derived_record_that_differs_names_each_number_that_changed_and_no_other():
    stored = {"id": "T-1", "verdict": "holds", "measured": {"gain": 0.2, "cap": 0.5, "share": None}}
    record = {**stored, "measured": {"gain": 0.2, "cap": 0.45, "share": None}}
    [said] = verify.changed_numbers(record, stored)
    assert said.path == artifact("claims")
    assert said.text.startswith("T-1: cap = 0.45 re-derived from the artifacts, 0.5 in reports/claims.json")
    flipped = verify.changed_numbers({**record, "verdict": "inconclusive"}, stored)
    assert flipped[0].text == "T-1: verdict inconclusive re-derived from the artifacts, holds in reports/claims.json"
    assert verify.changed_numbers(stored | {"statement": "reworded"}, stored)[0].text.endswith(
        "differs from the re-derived one in its text, not in a number; run `dvc repro report`")
    assert verify.changed_numbers(record, {}) == [
        Problem(artifact("claims"), "T-1: not in reports/claims.json; run `dvc repro report`")]


def test_a_problem_is_about_a_not_built_output_by_its_path_never_by_its_text(tmp_path):
    """An error names its artifact as a record: a message that begins with an absent output's path but
    is about no artifact, or one whose artifact is elsewhere, is still a problem."""
    absent = {Path("data")}
    built = verify.error_problem(ArtifactError("data/x.json: cannot be read", tmp_path / "data/x.json"))
    assert built == Problem(tmp_path / "data/x.json", "data/x.json: cannot be read")
    assert verify._absent(built, tmp_path, absent)
    assert not verify._absent(verify.error_problem(ParamsError("data/x.json: says data/ but names no file")),
                              tmp_path, absent)
    assert not verify._absent(verify.error_problem(ArtifactError("data/x.json: read from reports/",
                                                                 tmp_path / "reports/x.json")), tmp_path, absent)


def test_the_table_fits_120_columns_and_shows_each_condition_with_its_verdict():
    long_name = "a_quantity_with_a_name_long_enough_to_need_wrapping_" * 2
    check = {"quantity": long_name, "threshold": ">= 0.05", "interval": [0.0123456, 0.0987654], "verdict": "inconclusive"}
    record = {"id": "T-1", "verdict": "inconclusive", "measured": {long_name: 0.048, "gain": 0.2},
              "criteria": {"gain > 0": {"quantity": "gain", "threshold": "> 0", "interval": [0.1, 0.3],
                                        "verdict": "holds"}},
              "conditions": {"the marker costs": check}}
    lines = verify._table([ClaimCheck("T-1", record, agrees=False)]).splitlines()
    assert max(map(len, lines)) <= verify.WIDTH
    assert "T-1    inconclusive    DIFFERS" in lines
    assert "       criterion gain = 0.2 [0.1, 0.3] (> 0): holds" in lines
    shown = " ".join(line.strip() for line in lines)
    assert f"condition {long_name} = 0.048" in shown and "(>= 0.05): inconclusive" in shown
