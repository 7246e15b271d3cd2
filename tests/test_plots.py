"""`dvc plots show` (issue 54 item 5): no plot against a row index, none that mixes unrelated series in
one colour (a history CSV's metrics, splits and seeds; a table's models or normalisations), each table
coloured by what its claim compares, and the count of plots computable from dvc.yaml."""

import json
import subprocess
import sys

import pytest
from conftest import ROOT

from vitheory import plots

HISTORY = "model,seed,step,split,metric,value\nm,0,0,train,loss,1.0\nm,0,0,test,error_rate,0.5\n"
NOISE = "model,seed,normalisation,frequency,accuracy_drop\nvit,0,rms,0.5,0.1\ncnn,0,official,0.5,0.2\n"


def _problems(tmp_path, files: dict[str, str], entries: list) -> list[str]:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    pipeline = {"stages": {"stage": {"plots": entries}}, "plots": []}
    return [line for plot in plots.declared_plots(pipeline, tmp_path) for line in plots.problems(plot, tmp_path)]


def test_dvc_yaml_draws_no_plot_against_a_row_index_nor_mixed_series():
    assert plots.check() == []


def test_the_check_finds_a_row_index_and_mixed_series(tmp_path):
    assert "no x" in " ".join(_problems(tmp_path, {"history.csv": HISTORY}, ["history.csv"]))
    mixed = _problems(tmp_path, {"history.csv": HISTORY}, [{"history.csv": {"x": "step", "y": "value"}}])
    assert len(mixed) == 1 and "['split', 'metric']" in mixed[0], mixed
    assert _problems(tmp_path, {"history.csv": HISTORY},
                     [{"history.csv": {"x": "step", "y": "value", "template": "history"}}]) == []
    by_model = _problems(tmp_path, {"noise.csv": NOISE},
                         [{"noise.csv": {"x": "frequency", "y": "accuracy_drop", "template": "by_model"}}])
    assert len(by_model) == 1 and "['normalisation']" in by_model[0], by_model
    wrong = _problems(tmp_path, {"noise.csv": NOISE},
                      [{"noise.csv": {"x": "frequency", "y": "accuracy_drop", "template": "by_strategy"}}])
    assert "groups by ['strategy']" in wrong[0] and "['model', 'normalisation']" in wrong[1], wrong


def test_each_claims_table_is_coloured_by_what_it_compares():
    coloured = {plot.id: plots.TEMPLATES[plot.props["template"]].colour
                for plot in plots.declared_plots() if plot.props.get("template") in plots.TEMPLATES}
    assert coloured["reports/pk/noise.csv"] == coloured["reports/pk_train/runs.csv"] == "model"
    assert coloured["reports/sparsify/runs.csv"] == coloured["reports/sparsify_real/runs.csv"] == "strategy"
    assert coloured["reports/phase/default/vit.csv"] == "alpha_star"
    assert coloured["reports/history/li_vit.csv"] == "split"


def test_the_templates_are_written_as_defined(tmp_path):
    assert plots.stale_templates() == []
    plots.write_templates(tmp_path)
    (tmp_path / "by_model.json").write_text("{}\n")
    (tmp_path / "unknown.json").write_text("{}\n")
    assert plots.stale_templates(tmp_path) == ["by_model", "unknown"]


def test_the_count_is_what_dvc_draws():
    """The plots vitheory.plots counts from dvc.yaml are those `dvc plots show` draws, without an error."""
    run = subprocess.run([sys.executable, "-m", "dvc", "plots", "show", "--json"], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    shown = json.loads(run.stdout)
    assert not shown.get("errors"), shown.get("errors")
    declared = [plot.id for plot in plots.declared_plots()]
    assert len(declared) == len(set(declared))
    assert set(declared) == set(shown["data"]), sorted(set(declared) ^ set(shown["data"]))
    vega = {plot_id for plot_id, drawn in shown["data"].items() if drawn[0]["type"] == "vega"}
    assert vega == {plot.id for plot in plots.declared_plots() if not plot.image}


@pytest.mark.parametrize("argv, code", [(["--check"], 0), ([], 0)])
def test_the_command_line(argv, code, capsys):
    assert plots.main(argv) == code
    assert "plots" in capsys.readouterr().out
