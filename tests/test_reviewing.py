"""What an artifact-evaluation reviewer checks first: the license, the citation metadata, and a
reviewer's guide whose claim map and verdicts follow the paper table and the committed run."""

import tomllib
from pathlib import Path

import pytest
import yaml

from vitheory import reviewing
from vitheory.core.artifacts import read_json, write_json, write_table
from vitheory.core.paths import artifact, run_name, runs
from vitheory.papers import PAPERS
from vitheory.pk22 import trainings
from vitheory.reach import writers

ROOT = Path(__file__).resolve().parents[1]


def _citation() -> tuple[str, str]:
    return (ROOT / "CITATION.cff").read_text(), (ROOT / "pyproject.toml").read_text()


def test_the_license_is_apache_2_and_the_project_names_it():
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n                           Version 2.0, January 2004")
    assert "END OF TERMS AND CONDITIONS" in text and "Copyright 2026 the vitheory authors" in text
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]


def test_the_citation_file_is_complete_and_matches_the_project():
    assert reviewing.citation_problems(*_citation()) == []


def test_a_broken_citation_file_is_named():
    cff, pyproject = _citation()
    data = yaml.safe_load(cff)
    assert reviewing.citation_problems("title: [unclosed", pyproject)[0].startswith("CITATION.cff: not valid YAML")
    assert reviewing.citation_problems(yaml.safe_dump({k: v for k, v in data.items() if k != "title"}),
                                       pyproject) == ["CITATION.cff: no title"]
    assert reviewing.citation_problems(cff.replace('version: "0.1.0"', 'version: "0.0.9"'), pyproject) == [
        "CITATION.cff: version '0.0.9' is not pyproject.toml's '0.1.0'"]
    dropped = dict(data, references=data["references"][1:])
    assert reviewing.citation_problems(yaml.safe_dump(dropped), pyproject) == [
        f"CITATION.cff: [{PAPERS[0].key}] (arXiv 2302.06015) is not among the references"]
    untitled = dict(data, references=[{k: v for k, v in r.items() if k != "title"} for r in data["references"]])
    assert "CITATION.cff: reference 2 has no title" in reviewing.citation_problems(yaml.safe_dump(untitled), pyproject)


def test_the_guide_is_current_and_every_claim_has_a_row():
    text = (ROOT / reviewing.GUIDE).read_text()
    assert reviewing.main(["--check"]) == 0
    rows = reviewing.blocks(text)["claim-map"].splitlines()[2:]
    assert [row.split(" | ")[0].strip("| ") for row in rows] == [c.id for p in PAPERS for c in p.claims]
    for row in rows:  # every claim names at least one stage and one thing it reads or draws
        assert "`" in row.split(" | ")[2] and "](../" in row


def test_the_check_fails_when_a_claim_loses_its_row(tmp_path, monkeypatch, capsys):
    text = (ROOT / reviewing.GUIDE).read_text()
    row = next(line for line in text.splitlines() if line.startswith("| PK-8 | [PK22] |"))
    guide = tmp_path / reviewing.GUIDE
    guide.parent.mkdir()
    guide.write_text(text.replace(row + "\n", ""))
    for name in ("CITATION.cff", "pyproject.toml", "reports", "README.md", "docs/measured.yaml"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.setattr(reviewing, "ROOT", tmp_path)
    assert reviewing.main(["--check"]) == 1
    assert "the claim-map block is stale" in capsys.readouterr().err


def test_stage_times_take_each_stage_last_run(tmp_path):
    timings = tmp_path / reviewing.TIMINGS
    timings.mkdir(parents=True)
    (timings / "train_real.jsonl").write_text(
        '{"finished": "2026-01-01T00:00:00+00:00", "seconds": 9.0, "argv": ["--model", "vit"]}\n'
        '{"finished": "2026-01-01T00:01:00+00:00", "seconds": 5.0, "stage": "train_real@vit-natural", "cores": 2}\n'
        '{"finished": "2026-01-01T00:02:00+00:00", "seconds": 7.5, "stage": "train_real@vit-natural", "cores": 2, '
        '"load": {"start": 0.1, "mean": 2.2, "max": 2.4}}\n')  # its own two workers, and a little
    (timings / "report.jsonl").write_text(
        '{"finished": "2026-01-01T00:03:00+00:00", "seconds": 1.0, "stage": "report", "cores": 2, '
        '"load": {"start": 3.0, "mean": 2.5, "max": 3.1}}\n')
    (timings / "generate.jsonl").write_text(
        '{"finished": "2026-01-01T00:00:30+00:00", "seconds": 2.0, "stage": "generate", "cores": 2}\n')
    records = reviewing.logged_runs(tmp_path)
    table = reviewing.stage_times_table(records).splitlines()
    assert table[2:] == ["| `generate` | 2.0 | not recorded: an upper bound | 2026-01-01T00:00:30+00:00 |",
                         "| `train_real@vit-natural` | 7.5 | 0.10 / 2.20 / 2.40 | 2026-01-01T00:02:00+00:00 |",
                         "| `report` | 1.0 | 3.00 / 2.50 / 3.10, loaded: an upper bound | 2026-01-01T00:03:00+00:00 |",
                         "| **all 3 stage runs** | **10.5** | 2 of them upper bounds | on 2 cores |"]
    assert reviewing.stage_seconds(records) == {"generate": 2.0, "train_real@vit-natural": 7.5, "report": 1.0}
    assert reviewing.logged_runs(tmp_path / "elsewhere") == []


def test_a_recorded_run_is_read_back_as_data_and_a_plain_rewrite_leaves_it(tmp_path, monkeypatch):
    """`--record-run` keeps each stage's last logged run in the data file (its comment kept); the guide's table
    and the README's cost row are made from that file, so a later plain rewrite, with other stage runs in
    this machine's logs, changes neither."""
    timings = tmp_path / reviewing.TIMINGS
    timings.mkdir(parents=True)
    (timings / "report.jsonl").write_text(
        '{"finished": "2026-01-01T00:03:00+00:00", "seconds": 1.25, "stage": "report", "cores": 2, "argv": [], '
        '"load": {"start": 1.0, "mean": 2.0, "max": 2.1}}\n')
    (tmp_path / reviewing.STAGE_TIMES).parent.mkdir(parents=True)
    (tmp_path / reviewing.STAGE_TIMES).write_text("# what this file is\n[]\n")
    reviewing.record_run(tmp_path)
    recorded = (tmp_path / reviewing.STAGE_TIMES).read_text()
    assert recorded.startswith("# what this file is\n")
    assert reviewing.read_stage_times(tmp_path) == [{"stage": "report", "seconds": 1.25, "finished":
                                                     "2026-01-01T00:03:00+00:00", "cores": 2,
                                                     "load": {"start": 1.0, "mean": 2.0, "max": 2.1}}]
    (timings / "report.jsonl").write_text(
        '{"finished": "2026-01-02T00:00:00+00:00", "seconds": 9.0, "stage": "report", "cores": 2}\n')
    assert reviewing.read_stage_times(tmp_path)[0]["seconds"] == 1.25  # the log moved on, the record did not
    (timings / "generate.jsonl").write_text(
        '{"finished": "2026-01-02T00:00:00+00:00", "seconds": 2.0, "stage": "generate", "cores": 2}\n')
    reviewing.record_run(tmp_path)
    (timings / "report.jsonl").unlink()  # a later partial rerun: the recorded run is kept whole
    with pytest.raises(SystemExit, match=r"^error: .* logs no run of 1 stages the recorded run has \(report\)"):
        reviewing.record_run(tmp_path)
    assert [r["stage"] for r in reviewing.read_stage_times(tmp_path)] == ["generate", "report"]
    empty = tmp_path / "empty"
    with pytest.raises(SystemExit, match=r"^error: no stage run logged in .*: run the pipeline"):
        reviewing.record_run(empty)


def test_rewriting_the_guide_keeps_what_is_written_by_hand():
    text = "intro\n<!-- BEGIN a (x) -->\nold\n<!-- END a -->\nmiddle\n<!-- BEGIN b -->\nkept\n<!-- END b -->\n"
    assert reviewing.rewrite(text, {"a": "new\n"}) == text.replace("old", "new")


def _plotted_tables():
    """(path, x, y) of every per-run table with axes in dvc.yaml: a stage's own `plots` entry, or a
    top-level definition (the pk folder's tables)."""
    from vitheory.core.paths import stages

    for stage in stages().values():
        for entry in stage.get("plots", []):
            if isinstance(entry, dict):
                path, props = next(iter(entry.items()))
                if "y" in props:
                    yield path, props["x"], props["y"]
    for definition in yaml.safe_load((ROOT / "dvc.yaml").read_text()).get("plots", []):
        (_, props), = definition.items()
        for path, y in props["y"].items():
            yield path, props["x"], y


def test_every_per_run_table_is_plotted_on_columns_it_has():
    """`dvc plots show` draws each per-run table on named axes (issue 43), never a column that is not
    there (DVC would report it only when the plot is drawn)."""
    plotted = list(_plotted_tables())
    tables = {path for path, _, _ in plotted}
    expected = {str(p.relative_to(ROOT)) for p in (ROOT / "reports").rglob("*.csv")
                if p.parent.name != "history"  # long-form logs: DVCLive's series draw them
                and p != ROOT / artifact("atlas_table")}  # no stage's: `python -m vitheory.atlas` draws it
    assert expected <= tables, sorted(expected - tables)
    for path, x, y in plotted:
        header = (ROOT / path).read_text().splitlines()[0].split(",")
        assert x in header and y in header, (path, x, y, header)


def test_the_claim_map_lists_every_stage_upstream_of_a_claims_tables():
    """Closed under dvc.yaml's graph: a listed stage's deps are written by listed stages (issue 43: LI-1
    once listed phase_fit without phase_diagram, PK-2 left out pk_train and train_real)."""
    from vitheory.core.paths import stages

    graph = stages()
    rows = {row.split(" | ")[0].strip("| "): {s.strip("`") for s in row.split(" | ")[2].split(", ")}
            for row in reviewing.claim_map().splitlines()[2:]}
    for claim, listed in rows.items():
        for name, stage in graph.items():
            if name.split("@")[0] in listed - {"render", "report"}:
                upstream = {w.split("@")[0] for dep in stage.get("deps", []) for w in writers(Path(dep))}
                assert upstream - {"check_params"} <= listed, (claim, name, upstream - listed)
    assert {"phase_diagram", "phase_fit"} <= rows["LI-1"] and {"train_real", "pk_train", "pk_analysis"} <= rows["PK-2"]


def test_the_readme_maps_every_claim_to_its_stages_science_and_tests():
    block = reviewing.blocks((ROOT / reviewing.README).read_text())["claim-code"]
    rows = [row.split(" | ") for row in block.splitlines()[2:]]
    assert [row[0].strip("| ") for row in rows] == [c.id for p in PAPERS for c in p.claims]
    for row in rows:  # a stage, a module of the science and a test file in every row
        assert row[1].startswith("`") and "`vitheory/" not in row[2] and ".py`" in row[2] and "`tests/" in row[3]
    science = {row[0].strip("| "): row[2] for row in rows}
    assert "`pk22/hessian.py`" in science["PK-2"] and "`li23/noise_sweep.py`" in science["LI-6"]


def test_the_check_fails_when_the_readme_loses_a_claims_code_row(tmp_path, monkeypatch, capsys):
    text = (ROOT / reviewing.README).read_text()
    row = next(line for line in reviewing.blocks(text)["claim-code"].splitlines() if line.startswith("| PK-9 |"))
    (tmp_path / reviewing.README).write_text(text.replace(row + "\n", ""))
    for name in ("CITATION.cff", "pyproject.toml", "reports", "docs"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.setattr(reviewing, "ROOT", tmp_path)
    assert reviewing.main(["--check"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "README.md: the claim-code block is stale; run `python -m vitheory.reviewing`"]


def test_the_cost_table_quotes_the_guides_total_and_every_measurement_with_its_commit():
    records = reviewing.read_stage_times(ROOT)
    total = reviewing.RunTotal.of(records)
    measured = reviewing.load_measured((ROOT / reviewing.MEASURED).read_text())
    rows = reviewing.cost_table(records, measured).splitlines()[2:]
    assert len(rows) == len(measured) + 1 and f"({total.seconds:,.0f} s;" in rows[0]
    assert total.seconds == pytest.approx(sum(reviewing.stage_seconds(records).values()))
    for row, measurement in zip(rows[1:], measured):
        assert row.startswith(f"| `{measurement.command}` | {reviewing.duration(measurement.seconds)} | "
                              f"at {measurement.commit}, {measurement.date}, {measurement.machine};")
    assert reviewing.cost_table([], measured).splitlines()[2:] == rows[1:]


def test_the_real_accuracy_block_is_each_tables_mean_and_range_over_its_seeds(tmp_path):
    """Planted tables whose means need every seed (a dropped seed or an extra one moves each cell): 3 seeds of
    every train_real table, 3 of AlterNet on all the data, and a smallest fraction beside a larger one."""
    accuracies = {"natural": [0.80, 0.90, 0.87], "permuted": [0.70, 0.60, 0.62]}
    for model in runs("real_models"):
        write_json(tmp_path / artifact("real_metrics") / f"{run_name(model, 'natural')}.json", {
            "model": model, "pixels": "natural",
            "runs": {f"seed_{s}": {"seed": s, "test_accuracy": a} for s, a in enumerate(accuracies["natural"])}})
        write_json(tmp_path / artifact("real_metrics") / f"{run_name(model, 'permuted')}.json", {
            "model": model, "pixels": "permuted",
            "runs": {f"seed_{s}": {"seed": s, "test_accuracy": a} for s, a in enumerate(accuracies["permuted"])}})
    rows = ([("alternet", 1.0, s, 0.0, 0.0, 0.0, error) for s, error in enumerate([0.02, 0.04, 0.09])]
            + [("alternet", 0.1, s, 0.0, 0.0, 0.0, 0.5) for s in range(3)]
            + [("vit", 0.1, s, 0.0, train, 0.0, test) for s, (train, test) in enumerate([(0.3, 0.4), (0.5, 0.7),
                                                                                         (0.6, 0.6)])]
            + [("vit", 0.5, s, 0.0, 0.0, 0.0, 0.1) for s in range(3)])
    write_table(tmp_path / artifact("pk_train_runs"), trainings.COLUMNS, rows)
    lines = reviewing.real_accuracy(tmp_path).splitlines()
    assert lines[0] == "Test accuracy, mean (range) over 3 seeds:"
    assert lines[4] == "| ViT | 85.7% (80.0-90.0%) | 64.0% (60.0-70.0%) |"
    assert lines[7] == "| AlterNet | 95.0% (91.0-98.0%) | |"
    assert lines[9] == ("On 10% of the training images, the ViT reaches 43.3% (30.0-60.0%; chance is 10%). "
                        "Its training error is 46.7%: it underfits, which is PK-1's phenomenon.")


def test_a_claim_without_a_record_is_one_line_naming_it_and_the_command(tmp_path):
    """claims.json written before a claim existed: the results block cannot be made, and says so in one line."""
    records = [record for record in read_json(ROOT / artifact("claims"))["claims"] if record["id"] != "JSL-7"]
    write_json(tmp_path / artifact("claims"), {"claims": records})
    with pytest.raises(SystemExit, match=r"^error: .*claims\.json has no record of JSL-7: run `dvc repro report`"):
        reviewing.results_table(tmp_path)


def test_the_run_story_follows_the_records_and_says_the_target_as_a_difference():
    """Issue 65: the README's run-time section is generated from the recorded stage times: their total, how many
    are upper bounds and which, and the target as a difference, never a run; the committed README has it."""
    idle = {"stage": "a", "seconds": 3000.0, "finished": "2026-11-29T01:00:00+00:00", "cores": 2,
            "load": {"start": 2.0, "mean": 2.1, "max": 2.3}}
    loaded = {**idle, "stage": "b", "seconds": 1000.0, "finished": "2026-11-29T02:00:00+00:00",
              "load": {"start": 3.0, "mean": 3.9, "max": 4.5}}
    story = reviewing.run_story([idle, loaded])
    assert "2 stage runs on 2 cores, its last stage finished 2026-11-29T02:00:00+00:00" in story
    assert "1 of its stage times on loaded cores, upper bounds (`b`)" in story
    assert "add up to 4,000 s (1 h 7 min), 400 s over the project's target of 3,600 s" in story
    assert "600 s under" in reviewing.run_story([idle]) and "every stage on otherwise idle cores" in \
        reviewing.run_story([idle])
    readme = (reviewing.SOURCE / "README.md").read_text()
    assert reviewing.blocks(readme)["run-time"] == reviewing.run_story(reviewing.read_stage_times(reviewing.SOURCE))
