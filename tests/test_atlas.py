"""The atlas (issue 55): its grid validated like the rest of params.yaml, where a claim holds read from
planted verdicts, the table and figure from planted claims.json records, and the report's lines."""

import json
import math
import re
import subprocess

import numpy as np

import pytest
import yaml
from conftest import ROOT

from vitheory import report
from vitheory.atlas import atlas_figure, atlas_rows, queue_commands
from vitheory.core.claims import FAILS, HOLDS, INCONCLUSIVE
from vitheory.core.config import value_at
from vitheory.core.errors import ArtifactError, ParamsError
from vitheory.core.figures import save_png
from vitheory.grid import (BASE, COLUMNS, NOT_MEASURED, Point, line_key, reached_lines, read_atlas, where_it_holds,
                           where_lines, with_value)
from vitheory.papers import PAPERS
from vitheory.params import grid_points, parse_params
from vitheory.reach import reached_claims, rerun_by

KNOB = "generate.li_tokens.alpha_star"
REACHED = {"LI-X": {KNOB}}  # the planted claim's stages list the knob


def _raw(knobs):
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["atlas"]["knobs"] = knobs
    return raw


@pytest.mark.parametrize(("line", "said"), [
    ([(0.1, FAILS), (0.2, FAILS), (0.3, HOLDS), (0.4, HOLDS)], "from 0.3"),
    ([(0.1, FAILS), (0.2, INCONCLUSIVE), (0.3, HOLDS)], "from 0.3 (inconclusive at 0.2: not read as a flip)"),
    ([(0.1, FAILS), (0.2, HOLDS), (0.3, INCONCLUSIVE), (0.4, HOLDS)],
     "from 0.2 (inconclusive at 0.3: not read as a flip)"),
    ([(0.1, HOLDS), (0.2, INCONCLUSIVE), (0.3, HOLDS)], "everywhere (inconclusive at 0.2: not read as a flip)"),
    ([(0.1, HOLDS), (0.2, HOLDS)], "everywhere"),
    ([(0.1, FAILS), (0.2, INCONCLUSIVE)],
     "decided at one value only: does not hold at 0.1 (inconclusive at 0.2: not read as a flip)"),
    ([(0.2, HOLDS)], "decided at one value only: holds at 0.2"),
    ([(0.1, HOLDS), (0.2, HOLDS), (0.3, FAILS)], "up to 0.2"),
    ([(0.1, HOLDS), (0.2, FAILS), (0.3, HOLDS), (0.4, FAILS)], "nowhere in the grid"),
    ([(0.1, FAILS), (0.2, HOLDS), (0.3, FAILS), (0.4, HOLDS)], "from 0.4"),
    ([(0.1, INCONCLUSIVE), (0.2, INCONCLUSIVE)], "undecided: inconclusive at every value (0.1, 0.2)"),
    ([(0.1, FAILS), (0.2, NOT_MEASURED), (0.3, HOLDS)], "from 0.3 (not measured at 0.2: not read as a flip)"),
    ([(0.1, NOT_MEASURED), (0.2, INCONCLUSIVE)],
     "undecided: decided at no value (inconclusive at 0.2: not read as a flip) (not measured at 0.1: not read as "
     "a flip)"),
])
def test_where_a_claim_holds_along_a_knob(line, said):
    assert str(where_it_holds(line)) == said


def test_an_unknown_verdict_is_refused():
    with pytest.raises(ValueError, match="unknown verdicts"):
        where_it_holds([(0.1, "maybe")])


def test_the_committed_grid_passes_and_its_points_leave_the_default_out(default_params):
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    found = grid_points(raw)
    assert found and all(point.value != raw["generate"]["li_tokens"]["alpha_star"] for point in found
                         if point.knob == KNOB)
    assert len(found) == sum(BASE in line or value != value_at(raw, line)
                             for line, values in default_params.atlas.knobs.items() for value in values)
    for point in found:  # every name a git ref name: `dvc exp run --name` takes it
        assert subprocess.run(["git", "check-ref-format", f"refs/exps/{point.name}"]).returncode == 0, point.name


@pytest.mark.parametrize(("knobs", "message"), [
    ({"generate.li_tokens.alpha_sta": [0.1]}, "atlas.knobs.generate.li_tokens.alpha_sta is not a params key"),
    ({KNOB: [0.3, 1.5]}, r"atlas.knobs.generate.li_tokens.alpha_star: its point 1.5 is not a valid params file: "
                         r"generate.li_tokens.alpha_star = 1.5 is not allowed"),
    # the value passes its own rule, not the section's: alpha_confusion (0.025) must stay below it
    ({KNOB: [0.02]}, "its point 0.02 is not a valid params file: generate.li_tokens.alpha_confusion"),
    ({KNOB: 0.3}, "atlas.knobs.generate.li_tokens.alpha_star = 0.3 is not allowed: must be a non-empty list"),
    ({"atlas.knobs": [{}]}, "the atlas cannot vary its own grid"),
    # two values the loader types alike are one experiment run twice (names "25" and "25.0")
    ({"spatial.lr_mixing": [25, 25.0]}, r"atlas.knobs.spatial.lr_mixing = \[25, 25.0\] is not allowed: must be values "
                                        r"of distinct data: 25 and 25.0 both give 25.0; drop one"),
    ([KNOB], "atlas.knobs = .* is not allowed: must be a non-empty mapping of names, each to a list of values"),
])
def test_a_bad_grid_is_one_line_naming_the_knob(knobs, message):
    with pytest.raises(ParamsError, match=message):
        grid_points(_raw(knobs))


@pytest.mark.parametrize("preset", ["default", "quick", "paper", "decisive"])
def test_the_committed_grid_is_valid_under_every_preset(preset):
    from vitheory.preset import merge

    raw = merge(yaml.safe_load((ROOT / "params.yaml").read_text()),
                yaml.safe_load((ROOT / f"presets/{preset}.yaml").read_text()))
    assert grid_points(raw)


def test_the_pipelines_own_check_leaves_the_points_to_the_atlas():
    """An experiment's override that one grid point would break (D = 100 needs handbuilt.pos_dim >= 100)
    passes the pipeline's check; the atlas's check names the point."""
    raw = _raw({"generate.spatial.n_patches": [16, 64, 100]})
    raw["handbuilt"]["pos_dim"] = 64
    assert parse_params(raw).handbuilt.pos_dim == 64
    with pytest.raises(ParamsError, match="generate.spatial.n_patches: its point 100 is not a valid params file"):
        grid_points(raw)


def test_a_finished_point_is_not_queued_again():
    grid = [Point(KNOB, 0.1), Point(KNOB, 0.3)]
    assert queue_commands(grid, {grid[0].name: "abc"}) == [
        ["dvc", "exp", "run", "--queue", "-S", f"{KNOB}=0.3", "--name", f"atlas-{KNOB}-0.3"]]


def _record(claim_id, verdict, value=1.0, seeds_needed=None):
    check = {"verdict": verdict, "interval": [value - 0.1, value + 0.1], "quantity": "q", "seeds_needed": seeds_needed}
    return {"id": claim_id, "verdict": verdict, "measured": {"q": value}, "criteria": {"q > 0": check},
            "conditions": {}}


def _atlas(verdicts_by_value, default=0.2):
    """The table of one claim, LI-X, whose verdict at each alpha* is planted (NOT_MEASURED: the point's run
    failed on a diverged training); the default point at 0.2."""
    found = {Point(KNOB, value): [_record("LI-X", verdict, seeds_needed=12)]
             for value, verdict in verdicts_by_value.items() if value != default and verdict != NOT_MEASURED}
    failures = {Point(KNOB, value): "error: training loss became nan at step 3"
                for value, verdict in verdicts_by_value.items() if verdict == NOT_MEASURED}
    rows = atlas_rows([_record("LI-X", verdicts_by_value[default])], {"generate": {"li_tokens": {"alpha_star": default}}},
                      [KNOB], found, failures)
    return [dict(zip(COLUMNS, map(str, row))) for row in rows]


def test_a_planted_flip_is_named_at_its_value():
    rows = _atlas({0.1: FAILS, 0.15: FAILS, 0.2: HOLDS, 0.3: HOLDS})
    assert [(row["value"], row["claim_verdict"], row["default"]) for row in rows] == [
        ("0.2", HOLDS, "true"), ("0.1", FAILS, "false"), ("0.15", FAILS, "false"), ("0.3", HOLDS, "false")]
    assert where_lines(rows, REACHED) == {"LI-X": [f"`{KNOB}`: from 0.2"]}


def test_a_planted_inconclusive_point_is_not_read_as_a_flip():
    rows = _atlas({0.1: HOLDS, 0.15: INCONCLUSIVE, 0.2: HOLDS, 0.3: HOLDS})
    said = where_lines(rows, REACHED)["LI-X"]
    assert said[0] == f"`{KNOB}`: everywhere (inconclusive at 0.15: not read as a flip)"
    assert said[1:] == [f"at `{KNOB}` = 0.15, `q > 0`: about 12 seeds per group would decide it"]


def test_a_point_whose_run_failed_is_not_measured_and_says_why():
    """A failed experiment (a training diverged) is no verdict: its claims are not measured there, the reading
    leaves the value out and names it, with the run's error."""
    rows = _atlas({0.1: FAILS, 0.15: NOT_MEASURED, 0.2: HOLDS, 0.3: HOLDS})
    failed = [row for row in rows if row["value"] == "0.15"]
    assert [(row["verdict"], row["claim_verdict"], row["measured"], row["failure"]) for row in failed] == [
        (NOT_MEASURED, NOT_MEASURED, "", "error: training loss became nan at step 3")]
    assert where_lines(rows, REACHED)["LI-X"] == [
        f"`{KNOB}`: from 0.2 (not measured at 0.15: not read as a flip)",
        f"at `{KNOB}` = 0.15, not measured: error: training loss became nan at step 3"]


def test_a_knob_that_reaches_no_stage_of_a_claim_gets_no_reading_and_one_not_run_reads_not_run():
    """Issue 64: LI-Y's stages list no alpha* (the reach map, from dvc.yaml): no reading for it, one line naming
    the knob, even where its record moved; LI-X keeps its reading. A knob with no point run reads "not run"
    with what is left of it, never "decided at one value only"; one partly run reads and says what is left."""
    default = [_record("LI-X", HOLDS), _record("LI-Y", HOLDS, value=0.5)]
    found = {Point(KNOB, 0.1): [_record("LI-X", FAILS, value=-1.0), _record("LI-Y", HOLDS, value=0.6)],
             Point(KNOB, 0.3): [_record("LI-X", HOLDS, value=2.0), _record("LI-Y", HOLDS, value=0.5)]}
    other = "generate.li_tokens.noise_radius"
    raw = {"generate": {"li_tokens": {"alpha_star": 0.2, "noise_radius": 0.8}}}
    rows = [dict(zip(COLUMNS, map(str, row))) for row in atlas_rows(default, raw, [KNOB, other], found)]
    left = {other: "not run at 0.1, 0.5: each point about 55 s", KNOB: "not run at 0.4: each point about 55 s"}
    said = where_lines(rows, {"LI-X": {KNOB, other}, "LI-Y": {other}}, left)
    assert said["LI-X"] == [f"`{KNOB}`: from 0.2", f"`{KNOB}`: not run at 0.4: each point about 55 s",
                            f"`{other}`: not run (not run at 0.1, 0.5: each point about 55 s)"]
    assert said["LI-Y"] == [f"`{other}`: not run (not run at 0.1, 0.5: each point about 55 s)",
                            f"not reached by `{KNOB}`: no stage its numbers pass through lists them (dvc.yaml), so "
                            "no point of theirs can move it"]
    assert not any("decided at one value only" in line for lines in said.values() for line in lines)


def test_a_grid_knob_the_table_holds_no_row_of_reads_not_run_where_it_reaches():
    """A knob added to the grid after the committed table was made (no row of it, not even the default's)
    still reads "not run" with its cost for each claim it reaches, and is named among those that do not reach
    the others."""
    default = [_record("LI-X", HOLDS), _record("LI-Y", HOLDS, value=0.5)]
    raw = {"generate": {"li_tokens": {"alpha_star": 0.2}}}
    rows = [dict(zip(COLUMNS, map(str, row))) for row in atlas_rows(default, raw, [KNOB], {})]
    added = "phase.data.confusion_tokens"
    left = {added: "not run at 1, 2: each point about 8 min"}
    said = where_lines(rows, {"LI-X": {KNOB}, "LI-Y": {added}}, left)
    assert f"`{added}`: not run (not run at 1, 2: each point about 8 min)" in said["LI-Y"]
    assert not any(line.startswith(f"`{added}`") for line in said["LI-X"])
    assert any(line.startswith("not reached by") and f"`{added}`" in line for line in said["LI-X"])


def test_the_reach_of_a_knob_is_read_from_the_stages_a_claim_passes_through():
    """[LI23]'s phase grids read no li_tokens key: alpha* reaches LI-3 (train_li_vit) and not LI-1; the sample
    size of [JSL22] reaches JSL-2; the image data's fraction reruns every image training and analysis."""
    claims = {claim.id: claim for paper in PAPERS for claim in paper.claims}
    reached = reached_claims([claims["LI-1"], claims["LI-3"], claims["JSL-2"]],
                             {KNOB: [KNOB], "generate.spatial.n_train": ["generate.spatial.n_train"]})
    assert reached == {"LI-1": set(), "LI-3": {KNOB}, "JSL-2": {"generate.spatial.n_train"}}
    assert {"prepare_images", "train_real@vit-natural", "pk_train", "pk_analysis", "report"} <= \
        rerun_by("images.train_fraction")
    assert "train_real@vit-natural" not in rerun_by(KNOB)


def test_the_figure_draws_every_claim_at_every_point(tmp_path):
    rows = _atlas({0.1: FAILS, 0.15: NOT_MEASURED, 0.2: HOLDS, 0.3: INCONCLUSIVE})
    table = [[row[column] for column in COLUMNS] for row in rows]
    save_png(atlas_figure(table), tmp_path / "atlas.png", 50)
    save_png(atlas_figure(table), tmp_path / "again.png", 50)
    assert (tmp_path / "atlas.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "atlas.png").read_bytes() == (tmp_path / "again.png").read_bytes()  # same rows, same bytes


def test_the_figure_marks_a_point_that_leaves_a_claim_as_at_the_default():
    default = [_record("LI-X", HOLDS), _record("LI-Y", HOLDS)]
    found = {Point(KNOB, 0.1): [_record("LI-X", FAILS, value=-1.0), _record("LI-Y", HOLDS)]}
    fig = atlas_figure(atlas_rows(default, {"generate": {"li_tokens": {"alpha_star": 0.2}}}, [KNOB], found))
    marks = [(text.get_position(), text.get_text()) for text in fig.axes[0].texts]
    assert marks == [((0.5, 1.5), "=")]  # LI-Y (row 1) at alpha* = 0.1 (column 0, before the default's 0.2)


def test_the_matrix_orders_each_knobs_points_by_value_and_frames_the_default_in_its_place():
    rows = _atlas({0.3: HOLDS, 0.1: FAILS, 0.2: HOLDS, 0.15: FAILS})
    fig = atlas_figure([[row[column] for column in COLUMNS] for row in rows])
    ax = fig.axes[0]
    assert [label.get_text() for label in ax.get_xticklabels()] == [f"{KNOB}={v}" for v in ("0.1", "0.15", "0.2", "0.3")]
    assert [patch.get_x() for patch in ax.patches if patch.get_linewidth() == 2] == [2]


def test_a_claims_figure_draws_each_check_along_each_knob_that_reached_it_with_its_threshold():
    from vitheory.atlas import claim_figure

    rows = _atlas({0.1: FAILS, 0.15: INCONCLUSIVE, 0.2: HOLDS, 0.3: HOLDS})
    fig = claim_figure(rows, "LI-X", [KNOB])
    (ax,) = fig.axes
    assert [line.get_ydata()[0] for line in ax.get_lines() if line.get_linestyle() == "--"] == [0.0]  # q > 0
    points, ringed = ax.collections[-2:]
    assert len(points.get_offsets()) == 4 and ringed.get_offsets().tolist() == [[0.2, 1.0]]
    assert claim_figure(rows, "LI-X", []) is None  # no knob reaches it: no figure
    only_default = [row for row in rows if row["default"] == "true"]
    assert claim_figure(only_default, "LI-X", [KNOB]) is None  # no point of the knob ran


def test_the_committed_atlas_holds_each_of_its_claims_at_the_default_of_each_of_its_knobs(default_params):
    """The committed table (made from the experiments of its commit) has knobs of the grid and claims of the
    project, each of its claims at the default point of each of its knobs (a grid or a claim added since
    waits for the atlas remade on the next run: verify says it is not re-derived); a claim's "where it
    holds" lines go into its report section."""
    rows = read_atlas(ROOT / "reports/atlas/atlas.csv")
    claims = {record["id"] for record in json.loads((ROOT / "reports/claims.json").read_text())["claims"]}
    knobs, tabled = {row["knob"] for row in rows}, {row["claim"] for row in rows}
    assert knobs <= set(default_params.atlas.knobs) and tabled <= claims
    around_default = {knob for knob in knobs if not line_key(knob)[1]}  # a line around another point has none
    assert {(row["claim"], row["knob"]) for row in rows if row["default"] == "true"} == \
        {(claim, knob) for claim in tabled for knob in around_default}
    record = _record("LI-X", HOLDS) | {"statement": "s", "metric": "m", "units": {"seeds": 3}, "variants": {},
                                       "evidence": [], "criteria": {"q > 0": {**_record("LI-X", HOLDS)["criteria"]["q > 0"],
                                                                              "df": None, "method": "m", "kind": "mean",
                                                                              "units": {"seeds": 3}, "margin": 1.0,
                                                                              "source": "ours: x", "origin": "ours"}}}
    plain = report.claim_section(record, "r", 0.95)
    assert report.claim_section(record, "r", 0.95, where_lines([], REACHED).get("LI-X", ())) == plain
    shown = report.claim_section(record, "r", 0.95, [f"`{KNOB}`: from 0.2"])
    assert f"- `{KNOB}`: from 0.2" in shown and len(shown) == len(plain) + 4


def _git(root, *args):
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


def _commit(root, params, claims, message):
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    (root / "reports").mkdir(exist_ok=True)
    (root / "reports/claims.json").write_text(json.dumps({"claims": claims}))
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return _git(root, "rev-parse", "HEAD")


def _experiment(root, base, params, claims, name):
    """A finished experiment as DVC stores it: a commit on HEAD, under refs/exps/<baseline>/<name>."""
    sha = _commit(root, params, claims, name)
    _git(root, "update-ref", f"refs/exps/{base[:2]}/{base[2:]}/{name}", sha)
    _git(root, "reset", "-q", "--hard", base)


def test_the_table_reads_each_finished_experiment_of_head_from_its_commit(tmp_path, monkeypatch):
    """Experiments planted as DVC stores them (no DVC run): the table takes HEAD's run as the default point
    and each experiment's claims.json from its commit, names the planted flip, and refuses an experiment
    that ran at another value than its name says."""
    from dvc.repo import Repo

    from vitheory.atlas import make_table

    _git(tmp_path, "init", "-q")
    Repo.init(str(tmp_path))
    params = _raw({KNOB: [0.1, 0.2, 0.3]})
    committed = json.loads((ROOT / "reports/claims.json").read_text())["claims"]
    claims, flipped = ([dict(record, verdict=verdict) if record["id"] == "LI-3" else record for record in committed]
                       for verdict in (HOLDS, FAILS))
    base = _commit(tmp_path, params, claims, "the run")
    _experiment(tmp_path, base, with_value(params, KNOB, 0.1), flipped, f"atlas-{KNOB}-0.1")
    _experiment(tmp_path, base, with_value(params, KNOB, 0.3), claims, f"atlas-{KNOB}-0.3")
    monkeypatch.chdir(tmp_path)
    assert make_table(tmp_path) == []
    rows = read_atlas(tmp_path / "reports/atlas/atlas.csv")
    assert {(row["claim"], row["value"]) for row in rows} == {(r["id"], v) for r in claims for v in ("0.1", "0.2", "0.3")}
    assert where_lines(rows, {"LI-3": {KNOB}})["LI-3"][0] == f"`{KNOB}`: from 0.2"
    assert (tmp_path / "reports/atlas/atlas.png").is_file()
    (tmp_path / "NOTES.md").write_text("docs only\n")  # a later commit has no experiments of its own...
    _git(tmp_path, "add", "NOTES.md")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "docs only")
    assert make_table(tmp_path) == []  # ... but the same run: the points' records stand for them
    assert make_table(tmp_path, rev=base[:7]) == []  # `table --rev`: the experiments of the commit they ran at
    assert read_atlas(tmp_path / "reports/atlas/atlas.csv") == rows
    _experiment(tmp_path, base, with_value(params, KNOB, 0.4), flipped, f"atlas-{KNOB}-0.4")
    _commit(tmp_path, _raw({KNOB: [0.1, 0.2, 0.3, 0.4]}), claims, "the grid grows after the run")
    assert make_table(tmp_path, rev=base[:7]) == []  # the new value read from the run's experiment of it
    assert {row["value"] for row in read_atlas(tmp_path / "reports/atlas/atlas.csv")} == {"0.1", "0.2", "0.3", "0.4"}
    _git(tmp_path, "reset", "-q", "--hard", base)
    _experiment(tmp_path, base, with_value(params, KNOB, 0.25), claims, f"atlas-{KNOB}-0.3")  # renamed by hand
    with pytest.raises(ParamsError, match=f"experiment atlas-{KNOB}-0.3 ran with {KNOB} = 0.25, not 0.3"):
        make_table(tmp_path)


def test_a_table_of_other_columns_is_refused(tmp_path):
    (tmp_path / "atlas.csv").write_text("claim,verdict\n")
    with pytest.raises(ArtifactError, match=r"atlas.csv: columns \['claim', 'verdict'\] are not .* remake it with"):
        read_atlas(tmp_path / "atlas.csv")


def test_the_table_without_a_committed_run_says_what_to_do(tmp_path, capsys, monkeypatch):
    from vitheory.atlas import main

    _git(tmp_path, "init", "-q")
    monkeypatch.chdir(tmp_path)
    assert main(["table"]) == 2
    assert capsys.readouterr().err.startswith("error: HEAD:params.yaml cannot be read")


def test_the_table_reads_a_commits_grid_as_it_was_even_a_point_the_loader_now_refuses(tmp_path, monkeypatch):
    """At ef00d5b the grid held images.train_fraction 0.25, which failed in pk_analysis; the loader refuses it
    since, but the table of that commit still reads its grid (the point not run, or failed, is named), while
    `queue` refuses to queue it."""
    from dvc.repo import Repo

    from vitheory.atlas import main, make_table

    _git(tmp_path, "init", "-q")
    Repo.init(str(tmp_path))
    params = _raw({KNOB: [0.2, 0.3], "images.train_fraction": [0.25, 1.0]})
    claims = json.loads((ROOT / "reports/claims.json").read_text())["claims"]
    base = _commit(tmp_path, params, claims, "the run")
    _experiment(tmp_path, base, with_value(params, KNOB, 0.3), claims, f"atlas-{KNOB}-0.3")
    monkeypatch.chdir(tmp_path)
    assert make_table(tmp_path) == ["atlas-images.train_fraction-0.25"]
    assert {row["knob"] for row in read_atlas(tmp_path / "reports/atlas/atlas.csv")} == {KNOB, "images.train_fraction"}
    assert main(["queue", "--dry"]) == 2


def _atlas_repo(root, knobs, experiments):
    """A repository with a run (HEAD) and its finished experiments, `experiments`: value -> claims."""
    from dvc.repo import Repo

    _git(root, "init", "-q")
    Repo.init(str(root))
    params = _raw({KNOB: knobs})
    committed = json.loads((ROOT / "reports/claims.json").read_text())["claims"]
    base = _commit(root, params, committed, "the run")
    for value, claims in experiments.items():
        _experiment(root, base, with_value(params, KNOB, value), claims, f"atlas-{KNOB}-{value}")
    return committed


def test_a_clone_without_the_experiments_remakes_the_committed_atlas_from_its_records(tmp_path, monkeypatch):
    """Issue 65: the table and the points' records committed, a clone (no experiment refs) remakes the table and
    figure byte for byte from the records, verify's re-derivation agrees, and catches an edited number."""
    from vitheory.atlas import make_table, rederive

    made = tmp_path / "made"
    made.mkdir()
    committed = _atlas_repo(made, [0.1, 0.2, 0.3], {})
    flipped = [dict(record, verdict=FAILS) if record["id"] == "LI-3" else record for record in committed]
    base = _git(made, "rev-parse", "HEAD")
    _experiment(made, base, with_value(_raw({KNOB: [0.1, 0.2, 0.3]}), KNOB, 0.1), flipped, f"atlas-{KNOB}-0.1")
    _experiment(made, base, with_value(_raw({KNOB: [0.1, 0.2, 0.3]}), KNOB, 0.3), committed, f"atlas-{KNOB}-0.3")
    monkeypatch.chdir(made)
    assert make_table(made) == []
    assert sorted(path.name for path in (made / "reports/atlas/points").iterdir()) == [
        f"atlas-{KNOB}-0.1.json", f"atlas-{KNOB}-0.3.json"]
    _git(made, "add", "-A")
    _git(made, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "the atlas")
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", str(made), str(clone))
    assert not _git(clone, "for-each-ref", "refs/exps")
    before = {name: (clone / "reports/atlas" / name).read_bytes() for name in ("atlas.csv", "atlas.png")}
    monkeypatch.chdir(clone)
    assert make_table(clone) == []
    assert {name: (clone / "reports/atlas" / name).read_bytes() for name in before} == before
    assert rederive(clone) == ([], None)
    table = clone / "reports/atlas/atlas.csv"
    table.write_text(table.read_text().replace(",holds,holds,", ",fails,holds,", 1))
    problems, _ = rederive(clone)
    assert len(problems) == 1 and "differs from the table its records" in problems[0].text


def test_the_table_never_drops_a_point_of_the_workspaces_without_being_told(tmp_path, monkeypatch):
    """A point with neither an experiment here nor a record of this run is refused, not cut from the table (a
    record of another default run does not stand for it), even where the table gains as many points (CI at
    9cf8a32: a grid of two new points replaced the committed table's two); --fewer cuts it."""
    from vitheory.atlas import main, make_table, rederive

    committed = _atlas_repo(tmp_path, [0.1, 0.2, 0.3], {})
    base = _git(tmp_path, "rev-parse", "HEAD")
    for value in (0.1, 0.3):
        _experiment(tmp_path, base, with_value(_raw({KNOB: [0.1, 0.2, 0.3]}), KNOB, value), committed,
                    f"atlas-{KNOB}-{value}")
    later = f"refs/exps/{base[:2]}/{base[2:]}/atlas-{KNOB}-0.3"
    finished_later = _git(tmp_path, "rev-parse", later)
    _git(tmp_path, "update-ref", "-d", later)  # 0.3 finishes after the table is made
    monkeypatch.chdir(tmp_path)
    assert make_table(tmp_path) == [f"atlas-{KNOB}-0.3"]
    table = (tmp_path / "reports/atlas/atlas.csv").read_bytes()
    record = tmp_path / f"reports/atlas/points/atlas-{KNOB}-0.1.json"
    record.write_text(record.read_text().replace('"default_run": "', '"default_run": "another run '))
    _git(tmp_path, "update-ref", "-d", f"refs/exps/{base[:2]}/{base[2:]}/atlas-{KNOB}-0.1")
    assert rederive(tmp_path)[1].startswith("1 of its 1 points have no record of this run's claims")
    _git(tmp_path, "update-ref", later, finished_later)
    with pytest.raises(ArtifactError, match=rf"measures 1 points this table would not \({KNOB}=0.1: .* pass --fewer"):
        make_table(tmp_path)  # 0.3 gained, 0.1 lost: as many points, one of them dropped
    assert (tmp_path / "reports/atlas/atlas.csv").read_bytes() == table
    assert main(["table"]) == 2
    assert main(["table", "--fewer"]) == 0
    assert {row["value"] for row in read_atlas(tmp_path / "reports/atlas/atlas.csv")} == {"0.2", "0.3"}


def test_a_point_outside_a_premise_of_the_theorem_is_named_so_and_not_read_as_a_flip():
    """Issue 64: JSL-1 at D = 36, where the linear model errs under Theorem 3.1's 1/8 (its premise fails), is
    outside the theorem's premise: left out of the reading and named, not a failure of the claim."""
    def judged(value, verdict, premise_verdict):
        record = _record("JSL-X", verdict, value=value)
        premise = {**record["criteria"]["q > 0"], "verdict": premise_verdict, "premise": True}
        return {**record, "conditions": {"glm >= 0.125": premise}}

    knob = "generate.spatial.n_patches"
    found = {Point(knob, 36): [judged(0.3, INCONCLUSIVE, FAILS)], Point(knob, 100): [judged(0.9, HOLDS, HOLDS)]}
    rows = [dict(zip(COLUMNS, map(str, row))) for row in
            atlas_rows([judged(1.0, HOLDS, HOLDS)], {"generate": {"spatial": {"n_patches": 64}}}, [knob], found)]
    assert {row["criterion"] for row in rows} == {"q > 0", "premise: glm >= 0.125"}
    assert where_lines(rows, {"JSL-X": {knob}})["JSL-X"] == [
        f"`{knob}`: everywhere (outside the theorem's premise at 36: not read as a flip)"]


def test_a_premise_is_the_papers():
    from vitheory.core.claims import Criterion

    with pytest.raises(ValueError, match="a premise is the paper's"):
        Criterion("q", ">=", 0.1, "ours: a floor we chose", "mean", premise=True)


def _share_rows(counts, seeds=20, threshold=0.5, default=2048):
    """JSL-X's rows along the sample size: `counts` (n -> seeds meeting the definition) as a share criterion."""
    knob = "generate.spatial.n_train"
    label = f"seeds_meeting >= {threshold}"

    def record(meeting):
        share = meeting / seeds
        check = {"verdict": HOLDS if share >= threshold + 0.3 else FAILS if share <= threshold - 0.3 else INCONCLUSIVE,
                 "interval": [max(share - 0.2, 0), min(share + 0.2, 1)], "quantity": "seeds_meeting",
                 "kind": "share", "units": {"vit": seeds}}
        return {"id": "JSL-X", "verdict": check["verdict"], "measured": {"seeds_meeting": share},
                "criteria": {label: check}, "conditions": {}}

    found = {Point(knob, n): [record(k)] for n, k in counts.items() if n != default}
    rows = atlas_rows([record(counts[default])], {"generate": {"spatial": {"n_train": default}}}, [knob], found)
    return knob, [dict(zip(COLUMNS, map(str, row))) for row in rows]


def test_where_a_share_of_seeds_turns_along_a_knob_is_located_with_its_interval():
    """Issue 64: JSL-2's share of seeds meeting Definition 2.2, 3 of 20 at 2,048 and 19 of 20 at 8,192: the line
    names the crossing of 0.5 from a logistic fit with a seed-resampled interval, between the values where
    the verdict turns; a share that never turns gets none."""
    from vitheory.grid import share_crossing

    knob, rows = _share_rows({1024: 1, 2048: 3, 2896: 6, 4096: 12, 5793: 16, 8192: 19})
    said = where_lines(rows, {"JSL-X": {knob}})["JSL-X"]
    assert said[0] == f"`{knob}`: from 5793 (inconclusive at 2896, 4096: not read as a flip)"
    at, low, high = share_crossing([(1024, 1, 20), (2048, 3, 20), (2896, 6, 20), (4096, 12, 20), (5793, 16, 20),
                                    (8192, 19, 20)], 0.5, 0.95, draws=200)
    assert 2896 < low < at < high < 5793
    assert said[1].startswith(f"`{knob}`: `seeds_meeting >= 0.5` crosses its threshold at about {at:,.0f} [")
    _, flat = _share_rows({1024: 19, 2048: 18, 8192: 20})
    assert not any("crosses" in line for line in where_lines(flat, {"JSL-X": {knob}})["JSL-X"])


def test_the_crossings_interval_covers_at_its_level_at_the_seeds_we_use():
    """A known logistic curve crossing 0.5 at n = 3,500, 20 seeds at each of six sample sizes (JSL-2's
    spatial.seeds and the grid's n_train line): the seed-resampled interval covers the truth about 95% of
    the time (50 trials; three standard errors of Monte Carlo left free)."""
    from scipy import special

    from vitheory.grid import share_crossing

    sizes, truth = [1024, 2048, 2896, 4096, 5793, 8192], 3500.0
    chance = special.expit(3.0 * (np.log2(sizes) - np.log2(truth)))
    rng = np.random.default_rng(7)
    covered = [low <= truth <= high for low, high in
               (share_crossing(list(zip(sizes, rng.binomial(20, chance), [20] * 6)), 0.5, 0.95, draws=200)[1:]
                for _ in range(50))]
    assert np.mean(covered) >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / 50)


D_P = "spatial.vit.pos_dim @ generate.spatial.n_patches=100"


def test_a_line_around_another_point_sets_its_base_then_each_value_and_reaches_where_either_key_does():
    """d_p at D = 100 (Assumption 2's knob at another D): every value is a point, the default's too (the
    default point is not on the line), each setting its base first; a claim is reached where the base's key
    or the knob reaches it."""
    found = [point for point in grid_points(_raw({D_P: [32, 100, 128]})) if point.knob == D_P]
    assert [point.overrides for point in found] == [
        ["generate.spatial.n_patches=100", f"spatial.vit.pos_dim={value}"] for value in (32, 100, 128)]
    assert queue_commands(found[:1], {})[0][4:8] == ["-S", "generate.spatial.n_patches=100", "-S",
                                                     "spatial.vit.pos_dim=32"]
    claims = {claim.id: claim for paper in PAPERS for claim in paper.claims}
    reached = reached_lines([claims["JSL-1"], claims["LI-1"]], {D_P: [32, 100, 128]})
    assert reached == {"JSL-1": {D_P}, "LI-1": set()}
    rows = [dict(zip(COLUMNS, map(str, row))) for row in atlas_rows(
        [_record("LI-X", HOLDS)], _raw({}), [D_P], {found[0]: [_record("LI-X", FAILS)]})]
    assert [(row["value"], row["default"]) for row in rows] == [("32", "false")]  # no default row on the line


@pytest.mark.parametrize(("knobs", "message"), [
    ({"spatial.vit.pos_dim @ spatial.vit.pos_dim=64": [32]}, "its base sets the knob itself"),
    ({"spatial.vit.pos_dim @ generate.spatial.n_patches": [32]}, "its base 'generate.spatial.n_patches' is not "
                                                                 "key=value"),
    ({"spatial.vit.pos_dim @ generate.spatial.patches=100": [32]}, "generate.spatial.patches is not a params key"),
    ({"images.train_fraction @ preset=nonesuch": [0.5]}, "'nonesuch' names no preset"),
])
def test_a_bad_line_around_another_point_is_one_line_naming_it(knobs, message):
    with pytest.raises(ParamsError, match=message):
        grid_points(_raw(knobs))


ALTERNET = "pk_train.alternet.blocks"


def test_a_value_with_the_keys_that_move_with_it_sets_them_and_reaches_where_they_do():
    """AlterNet's depth: its CNN of the same shape (real.models.cnn) and PK-13's model-end placement must move
    with its blocks, or the point is not a valid params file; each value sets them with the knob, the line
    reaches the claims any of them reaches (JSL-5 reads the CNN, not AlterNet), and a value whose settings
    are all the default's is the default point."""
    deeper = {"value": [2, 5], "with": {"real.models.cnn.blocks": [2, 5], "pk_buildup.model_end": [3, 4, 5, 6]}}
    same = {"value": [2, 3], "with": {"real.models.cnn.blocks": [2, 3]}}
    (point,) = grid_points(_raw({ALTERNET: [[2, 3], same, deeper]}))
    assert {point: 1}[grid_points(_raw({ALTERNET: [[2, 3], same, deeper]}))[0]] == 1  # a key of the table's maps
    assert point.value == [2, 5] and point.name == "atlas-pk_train.alternet.blocks-2_5" and point.overrides == [
        "real.models.cnn.blocks=[2, 5]", "pk_buildup.model_end=[3, 4, 5, 6]", "pk_train.alternet.blocks=[2, 5]"]
    with pytest.raises(ParamsError, match=r"its point \[2, 5\] is not a valid params file: .*real.models.cnn.blocks"):
        grid_points(_raw({ALTERNET: [[2, 5]]}))
    claims = {claim.id: claim for paper in PAPERS for claim in paper.claims}
    reached = reached_lines([claims["JSL-5"], claims["LI-1"]], {ALTERNET: [[2, 3], deeper]})
    assert reached == {"JSL-5": {ALTERNET}, "LI-1": set()}
    assert reached_lines([claims["JSL-5"]], {ALTERNET: [[2, 3]]}) == {"JSL-5": set()}


@pytest.mark.parametrize(("value", "message"), [
    ({"value": [2, 5]}, "is not a value nor {value: v, with: {key: value, ...}}"),
    ({"value": [2, 5], "with": {}}, "is not a value nor"),
    ({"value": [2, 5], "with": {ALTERNET: [2, 7]}}, f"with sets {ALTERNET}: it moves other keys"),
    ({"value": [2, 5], "with": {"atlas.presets": []}}, "with sets atlas.presets"),
    ({"value": [2, 5], "with": {"real.models.cnn.block": [2, 5]}}, "real.models.cnn.block is not a params key"),
])
def test_a_bad_value_with_keys_is_one_line_naming_the_knob(value, message):
    with pytest.raises(ParamsError, match=f"atlas.knobs.{ALTERNET}.*" + re.escape(message)):
        grid_points(_raw({ALTERNET: [value]}))


def test_a_value_that_names_a_preset_brings_its_settings_and_one_that_names_none_is_refused():
    """Fashion-MNIST at the cluttered digits' sizes would leave its regime (patch 2: 196 tokens): the point
    of images.dataset = fashion_mnist sets presets/fashion_mnist.yaml's settings, then the knob."""
    raw = _raw({"images.dataset": ["fashion_mnist"]})
    raw["atlas"]["presets"] = ["images.dataset"]
    (point,) = grid_points(raw)
    preset = yaml.safe_load((ROOT / "presets/fashion_mnist.yaml").read_text())
    assert dict(point.settings)["real.models.vit.patch"] == preset["real"]["models"]["vit"]["patch"] == 4
    assert point.settings[-1] == ("images.dataset", "fashion_mnist") and point.name == "atlas-images.dataset-fashion_mnist"
    raw["atlas"]["knobs"] = {"images.dataset": ["digits"]}
    with pytest.raises(ParamsError, match="atlas.knobs.images.dataset: 'digits' names no preset"):
        grid_points(raw)
    raw["atlas"]["presets"] = ["images.canvas"]
    with pytest.raises(ParamsError, match="atlas.knobs.images.canvas is not a params key"):
        grid_points(raw)


def test_a_line_of_sources_reads_value_by_value_and_names_each_check_that_differs_with_both_numbers():
    """Issue 70: two sources have no order, so no "from" or "up to"; where a verdict differs between them the
    claim's lines give the check's number and interval at each."""
    assert str(where_it_holds([("cluttered_digits", HOLDS), ("fashion_mnist", FAILS)])) == \
        'by value: holds at "cluttered_digits", does not hold at "fashion_mnist"'
    knob, raw = "images.dataset", {"images": {"dataset": "cluttered_digits"}}
    default = [_record("LI-X", HOLDS, value=0.9), _record("LI-Y", HOLDS, value=0.5)]
    found = {Point(knob, "fashion_mnist"): [_record("LI-X", FAILS, value=-0.2), _record("LI-Y", HOLDS, value=0.7)]}
    rows = [dict(zip(COLUMNS, map(str, row))) for row in atlas_rows(default, raw, [knob], found)]
    said = where_lines(rows, {"LI-X": {knob}, "LI-Y": {knob}})
    assert said["LI-X"] == [f'`{knob}`: by value: holds at "cluttered_digits", does not hold at "fashion_mnist"',
                            f'`{knob}`: `q > 0`: 0.9 [0.8, 1] (holds) at "cluttered_digits"; -0.2 [-0.3, -0.1] '
                            '(does not hold) at "fashion_mnist"']
    assert said["LI-Y"] == [f'`{knob}`: by value: holds at "cluttered_digits", holds at "fashion_mnist"']
    from vitheory.atlas import claim_figure

    (ax,) = claim_figure(rows, "LI-X", [knob]).axes  # side by side, in the table's order
    assert [label.get_text() for label in ax.get_xticklabels()] == ["cluttered_digits", "fashion_mnist"]
