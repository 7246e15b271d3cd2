"""The preview of a params change (issue 65): the stages it reruns, named apart from those that would run anyway,
a refused value one line, and params.yaml byte for byte as it was, whatever happened."""

import subprocess
import sys

import pytest
import yaml
from conftest import ROOT

from vitheory.core.errors import ParamsError, VitheoryError
from vitheory.preview import main, preview

STAGES = {"stages": {  # check_params as the pipeline has it: every key, an output that never changes, read by all
    "check_params": {"cmd": "python -c \"open('check.txt', 'w').write('ok')\"", "params": ["real", "render"],
                     "outs": ["check.txt"], "meta": {"constant_output": True}},
    "seeds": {"cmd": "python -c \"open('seeds.txt', 'w').write('s')\"", "params": ["real.seeds"],
              "deps": ["check.txt"], "outs": ["seeds.txt"]},
    "after": {"cmd": "python -c \"open('after.txt', 'w').write(open('seeds.txt').read())\"", "deps": ["seeds.txt"],
              "outs": ["after.txt"]},
    "dpi": {"cmd": "python -c \"open('dpi.txt', 'w').write('d')\"", "params": ["render.dpi"], "deps": ["check.txt"],
            "outs": ["dpi.txt"]},
}}


def _run(root, *command):
    subprocess.run(command, cwd=root, check=True, capture_output=True)


@pytest.fixture
def built(tmp_path):
    """A repository of four stages (check_params first) on the project's params.yaml, every stage run."""
    _run(tmp_path, "git", "init", "-q")
    _run(tmp_path, sys.executable, "-m", "dvc", "init", "-q")
    (tmp_path / "params.yaml").write_bytes((ROOT / "params.yaml").read_bytes())
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump(STAGES))
    _run(tmp_path, sys.executable, "-m", "dvc", "repro", "-q")
    return tmp_path


def test_a_change_names_the_stages_that_list_it_and_those_after_them(built):
    before = (built / "params.yaml").read_bytes()
    assert preview(built, ["real.seeds=8"]) == (["check_params", "seeds", "after"], [])
    assert preview(built, ["render.dpi=100"]) == (["check_params", "dpi"], [])
    assert (built / "params.yaml").read_bytes() == before


def test_only_a_stage_marked_constant_stops_what_a_change_reruns(built):
    unmarked = yaml.safe_load((built / "dvc.yaml").read_text())
    del unmarked["stages"]["check_params"]["meta"]
    (built / "dvc.yaml").write_text(yaml.safe_dump(unmarked))
    rerun, already = preview(built, ["real.seeds=8"])
    assert set(rerun) == {"check_params", "seeds", "after", "dpi"} and already == []  # dpi: through the check


def test_a_stage_not_built_here_is_named_apart_from_what_the_change_reruns(built):
    (built / "dpi.txt").unlink()
    assert preview(built, ["real.seeds=8"]) == (["check_params", "seeds", "after"], ["dpi"])


@pytest.mark.parametrize(("override", "error", "message"), [
    ("real.seeds=0", ParamsError, "real.seeds = 0 is not allowed"),
    ("real.no_such_key=1", VitheoryError, "real.no_such_key=1: "),
])
def test_a_refused_change_is_one_line_and_params_yaml_is_restored(built, override, error, message, monkeypatch,
                                                                 capsys):
    before = (built / "params.yaml").read_bytes()
    with pytest.raises(error, match=message):
        preview(built, [override])
    assert (built / "params.yaml").read_bytes() == before
    monkeypatch.chdir(built)
    assert main(["-S", override]) == 2
    assert capsys.readouterr().err.count("\n") == 1

