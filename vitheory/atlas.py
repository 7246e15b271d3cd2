"""`python -m vitheory.atlas queue | table`: the atlas, each claim's verdict across the regimes
the papers name, one DVC experiment per point of params.yaml's `atlas` grid (vitheory.grid).

    python -m vitheory.atlas queue --dry   # print the `dvc exp run --queue` of every point not yet run
    python -m vitheory.atlas queue         # queue them; then `dvc queue start -j 1`
    python -m vitheory.atlas table         # reports/atlas/atlas.csv and atlas.png from the experiments
    python -m vitheory.atlas table --rev R # the same from commit R's run and experiments (a later commit
                                           # that changed only docs has none of its own)

Each point is `dvc exp run --queue -S <knob>=<value> --name atlas-<knob>-<value>`: DVC reruns only the
stages that list the knob (and restores a stage seen before from its run-cache), a finished point is
never queued again, and points run elsewhere arrive with `dvc exp pull` (README, "The atlas").

`table` finds the finished experiments of HEAD through DVC's API (`Repo.experiments.ls`, what
`dvc exp list` prints: finished experiments only, with their full commits, read from the local git refs,
offline) and reads each one's `reports/claims.json` from its commit (`git show`): claims.json is a
git-tracked output, not a metric, so `dvc exp show --json` does not carry it, and exp show's rows also
hold queued and failed experiments, whose revisions are stashes of the baseline. The default point is
HEAD's own committed run. The table reads the grid from the workspace's params.yaml around that commit's
defaults, so that a line added after a run reads the experiments of it run there (`--rev`), and checks that
each experiment ran at its point's settings. A failed
experiment of HEAD (its run stopped on an error: a training that diverged) is a point not measured, each
claim's row there carrying the run's first error line from the queue's log (DVC's `celery_queue`); `queue`
queues it again.

Experiments live in one machine's git refs and run-cache; the table does not. Each finished point's record
(its claims.json records, its params, its experiment's commit and a digest of the default run's claims.json)
is written to `reports/atlas/points/<name>.json` and committed with the table, so that a clone re-derives
the table from git alone (`verify` does) and a point whose experiment is not here is read from its record.
A record counts only for the default run it was measured against (the same claims.json). `table` refuses to
write a table that drops a measured point of the one in the workspace unless given `--fewer`.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import itertools
import json
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import yaml
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from vitheory.core.artifacts import read_json, write_json, write_table
from vitheory.core.claims import FAILS, HOLDS, INCONCLUSIVE, labelled_checks
from vitheory.core.config import read_params_file
from vitheory.core.errors import ArtifactError, ParamsError, VitheoryError
from vitheory.core.figures import save_png, set_theme
from vitheory.core.paths import artifact
from vitheory.core.rederive import Problem
from vitheory.grid import (COLUMNS, NOT_MEASURED, Point, knob_value, line_key, line_order, numeric, points,
                           reached_lines, read_atlas, threshold_of, value_text)
from vitheory.params import DEFAULT_PATH, parse_params
from vitheory.params import grid_points as checked_points
from vitheory.measured import duration
from vitheory.papers import PAPERS
from vitheory.reach import rerun_by
from vitheory.report import power_line
from vitheory.reviewing import read_stage_times, stage_seconds

DEFAULT = "default"
VERDICT_COLOURS = {HOLDS: "#4daf4a", FAILS: "#e41a1c", INCONCLUSIVE: "#bdbdbd", NOT_MEASURED: "#404040"}


def git_file(root: Path, rev: str, path: str | Path) -> str:
    """A file's text at a commit; ArtifactError (one line) when the commit has none."""
    shown = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=root, capture_output=True, text=True)
    if shown.returncode != 0:
        raise ArtifactError(f"{rev[:12]}:{path} cannot be read ({shown.stderr.strip()}): the atlas reads the "
                            "committed run, so `dvc repro` and commit first")
    return shown.stdout


def experiments(root: Path, rev: str = "HEAD") -> tuple[dict[str, str], dict[str, str]]:
    """Commit `rev`'s experiments, read through one DVC repo: the finished ones (name -> commit) and the failed
    ones (their run stopped on an error: name -> the run's first error line, from the queue's log of it)."""
    from dvc.repo import Repo  # DVC's import takes a second: the figure and the rows go without it

    head = subprocess.run(["git", "rev-parse", rev], cwd=root, capture_output=True, text=True).stdout.strip()
    failures = {}
    with Repo(str(root)) as repo:
        listed = repo.experiments.ls(rev=rev)
        queue = repo.experiments.celery_queue
        for result in queue.iter_failed():
            entry = result.entry
            if entry.baseline_rev != head or not entry.name:
                continue
            try:
                log = Path(queue.proc[entry.stash_rev].stdout).read_text(errors="replace").splitlines()
            except (KeyError, OSError):
                log = []
            errors = [line.strip() for line in log if line.startswith(("error:", "ERROR:"))]
            failures[entry.name] = errors[0] if errors else f"the experiment failed (`dvc queue logs {entry.name}`)"
    done = {name: commit for runs in listed.values() for name, commit in runs if commit}
    return done, failures


def queue_commands(grid_points: Sequence[Point], done: Mapping[str, str]) -> list[list[str]]:
    """The `dvc exp run --queue` command of every point not yet finished."""
    return [["dvc", "exp", "run", "--queue", *(arg for setting in point.overrides for arg in ("-S", setting)),
             "--name", point.name] for point in grid_points if point.name not in done]


def point_cost(point: Point, seconds: Mapping[str, float]) -> str:
    """What `point` costs: the committed run's times of the stages its settings rerun (vitheory.reach), an
    estimate at the default sizes: less where a stage's inputs come out the same (it comes back from the
    run-cache), more where the point enlarges the data or a model (PERF)."""
    rerun = sorted(set().union(*(rerun_by(key) for key, _ in point.settings)))
    untimed = [stage for stage in rerun if stage not in seconds]
    said = f"about {duration(sum(seconds.get(stage, 0.0) for stage in rerun))} of stage time"
    if untimed:
        said += f" and {len(untimed)} stages the committed run did not time ({', '.join(untimed)})"
    return (f"{said}: the committed run's times of the {len(rerun)} stages it reruns, at the default sizes on an "
            "idle machine (more where the point enlarges the data or a model; beside other runs, three to five "
            "times more: docs/PERF.md)")


def not_run(raw: Mapping[str, Any], rows: Sequence[Mapping[str, str]], seconds: Mapping[str, float]) -> dict[str, str]:
    """Each knob of the grid -> its values that no point of the table measured (or failed at), with what each
    point costs and the command that queues it."""
    ran = {(row["knob"], row["value"]) for row in rows if row["default"] == "false"}
    left: dict[str, list[Point]] = {}
    for point in points(parse_params(raw).atlas, raw):
        if (point.knob, value_text(point.value)) not in ran:
            left.setdefault(point.knob, []).append(point)
    return {knob: (f"not run at {', '.join(value_text(point.value) for point in left_out)}: "
                   + ("each point " if len(left_out) > 1 else "")
                   + f"{point_cost(left_out[0], seconds)}; "  # a line's points set the same keys
                   "`python -m vitheory.atlas queue` queues it") for knob, left_out in left.items()}


def point_rows(records: Sequence[Mapping[str, Any]], knob: str, value: Any,
               baseline: Sequence[Mapping[str, Any]] | None = None) -> list[list[Any]]:
    """The table's rows of one point's claims.json records, on one knob's line; `baseline`: the default
    point's records, None when the point is the default. A claim is unchanged at a point where its whole
    record (every measured number, interval and verdict) equals the default's: the knob did not reach what
    it measures."""
    as_text = {record["id"]: json.dumps(record, sort_keys=True) for record in baseline or records}
    rows = []
    for record in records:
        unchanged = str(json.dumps(record, sort_keys=True) == as_text.get(record["id"])).lower()  # NaN equals NaN
        for label, check in labelled_checks(record):
            low, high = check["interval"]
            counts = list((check.get("units") or {}).values())
            rows.append([record["id"], label, knob, value_text(value), str(baseline is None).lower(),
                         check["verdict"], record["verdict"], record["measured"][check["quantity"]], low, high,
                         power_line(label, check) or "", "", unchanged, check.get("kind", ""),
                         counts[0] if len(counts) == 1 else ""])
    return rows


def failed_rows(records: Sequence[Mapping[str, Any]], knob: str, value: Any, failure: str) -> list[list[Any]]:
    """A failed point's rows: each claim of `records` (the default point's) not measured, with the run's error."""
    return [[record["id"], "", knob, value_text(value), "false", NOT_MEASURED, NOT_MEASURED, "", "", "", "", failure,
             "false", "", ""] for record in records]


def atlas_rows(default: Sequence[Mapping[str, Any]], default_params: Mapping[str, Any],
               knobs: Sequence[str], found: Mapping[Point, Sequence[Mapping[str, Any]]],
               failures: Mapping[Point, str] | None = None) -> list[list[Any]]:
    """The whole table: on each knob's line, the default point's records (at the knob's default value; not on
    a line around another point), then those of every finished point of that knob, then its failed points
    (`failures`: point -> error)."""
    rows = []
    for knob in knobs:
        key, base = line_key(knob)
        if not base:
            rows += point_rows(default, knob, knob_value(default_params, key))
        for point, records in found.items():
            if point.knob == knob:
                rows += point_rows(records, knob, point.value, default)
        for point, failure in (failures or {}).items():
            if point.knob == knob:
                rows += failed_rows(default, knob, point.value, failure)
    return rows


def run_digest(claims_text: str) -> str:
    """The default run a point was measured against: its claims.json, by content."""
    return hashlib.sha256(claims_text.encode()).hexdigest()


def read_points(root: Path, grid_points: Sequence[Point], done: Mapping[str, str],
                default_run: str) -> dict[Point, list[Any]]:
    """Each finished experiment's claims.json records, after checking that it ran at its value; each one's
    record is written to reports/atlas/points/ for the clone."""
    found = {}
    for point in grid_points:
        if point.name not in done:
            continue
        rev = done[point.name]
        ran_with = yaml.safe_load(git_file(root, rev, DEFAULT_PATH))
        for key, value in point.settings:
            ran_at = knob_value(ran_with, key)
            if ran_at != value:
                raise ParamsError(f"experiment {point.name} ran with {key} = {ran_at!r}, not {value!r}: "
                                  f"`dvc exp remove {point.name}` and queue it again")
        found[point] = json.loads(git_file(root, rev, artifact("claims")))["claims"]
        write_json(root / artifact("atlas_points") / f"{point.name}.json",
                   {"point": point.name, "knob": point.knob, "value": point.value, "settings": dict(point.settings),
                    "experiment": rev,
                    "default_run": default_run, "params": ran_with, "claims": found[point]})
    return found


def recorded_points(root: Path, grid_points: Sequence[Point], default_run: str) -> dict[Point, list[Any]]:
    """The committed records of `grid_points` measured against `default_run` (others are of another run)."""
    found = {}
    for point in grid_points:
        path = root / artifact("atlas_points") / f"{point.name}.json"
        if path.is_file():
            record = read_json(path)
            if record.get("default_run") == default_run and record.get("value") == point.value:
                found[point] = record["claims"]
    return found


def measured_points(rows: Sequence[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """The (knob, value) of every point of a table that has verdicts, the default left out."""
    return {(row["knob"], row["value"]) for row in rows
            if row["default"] == "false" and row["claim_verdict"] != NOT_MEASURED}


def atlas_figure(rows: Sequence[Sequence[Any]]) -> plt.Figure:
    """Claims as rows, points as columns grouped by knob and in value order within each (the default point in
    its place on every knob's line, framed), each cell the claim's verdict, marked "=" where the point left
    the claim's record as at the default."""
    table = pd.DataFrame(rows, columns=COLUMNS)
    table["point"] = [f"{knob}={value}" for knob, value in zip(table["knob"], table["value"])]
    order = [f"{knob}={value_text(value)}" for knob in dict.fromkeys(table["knob"])
             for value in line_order([json.loads(v) for v in dict.fromkeys(table.loc[table["knob"] == knob, "value"])])]
    table = table.drop_duplicates(["claim", "point"])
    claims = list(dict.fromkeys(table["claim"]))
    codes = {verdict: index for index, verdict in enumerate(VERDICT_COLOURS)}
    grid = (table.assign(code=table["claim_verdict"].map(codes))
            .pivot(index="claim", columns="point", values="code").reindex(index=claims, columns=order))
    fig, ax = plt.subplots(figsize=(1.2 + 0.45 * len(order), 0.8 + 0.3 * len(claims)))
    sns.heatmap(grid.astype(float), ax=ax, cmap=ListedColormap(list(VERDICT_COLOURS.values())), vmin=-0.5,
                vmax=len(codes) - 0.5, cbar=False, linewidths=0.5, linecolor="white", mask=grid.isna())
    same = table.pivot(index="claim", columns="point", values="unchanged").reindex(index=claims, columns=order)
    defaults = set(table.loc[table["default"] == "true", "point"])
    for column, point in enumerate(order):
        if point in defaults:
            ax.add_patch(plt.Rectangle((column, 0), 1, len(claims), fill=False, edgecolor="black", linewidth=2))
            continue
        for row, claim in enumerate(claims):  # a point whose knob does not reach the claim repeats the default
            if same.loc[claim, point] == "true":
                ax.text(column + 0.5, row + 0.5, "=", ha="center", va="center", fontsize="small", color="white")
    ax.set_xlabel("point (one knob from the default, framed on each knob's line; =: the claim's record as at the "
                  "default)")
    ax.set_ylabel("claim")
    ax.set_xticks(np.arange(len(order)) + 0.5, order, rotation=60, ha="right")
    ax.legend(handles=[Patch(color=colour, label=verdict) for verdict, colour in VERDICT_COLOURS.items()],
              loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    return fig


def claim_figure(rows: Sequence[Mapping[str, str]], claim: str, knobs: Sequence[str]) -> plt.Figure | None:
    """One claim along the knobs that reach it: each criterion's and condition's measured value (a panel row
    each) against each knob's values (a panel column each), with its interval, its threshold (dashed) and
    the default point (ringed); a point's colour is its verdict. None when no point of these knobs ran."""
    table = pd.DataFrame([row for row in rows if row["claim"] == claim and row["knob"] in knobs
                          and row["claim_verdict"] != NOT_MEASURED])
    if table.empty or not (table["default"] == "false").any():
        return None
    knobs = [knob for knob in knobs if (table.loc[table["knob"] == knob, "default"] == "false").any()]
    labels = list(dict.fromkeys(table["criterion"]))
    fig, axes = plt.subplots(len(labels), len(knobs), figsize=(3.2 * len(knobs), 2.2 * len(labels)),
                             squeeze=False, sharex="col")
    for (row, label), (column, knob) in itertools.product(enumerate(labels), enumerate(knobs)):
        ax, line = axes[row][column], table[(table["criterion"] == label) & (table["knob"] == knob)]
        values = [json.loads(value) for value in line["value"]]
        ordered, order = numeric(values), line_order(values)  # a source of images has no order: side by side
        x = np.array(values if ordered else [order.index(value) for value in values], dtype=float)
        y, low, high = (pd.to_numeric(line[key], errors="coerce").to_numpy() for key in ("measured", "low", "high"))
        ax.errorbar(x, y, yerr=[np.clip(y - low, 0, None), np.clip(high - y, 0, None)], fmt="none",
                    ecolor="0.4", capsize=3)
        ax.scatter(x, y, c=[VERDICT_COLOURS[verdict] for verdict in line["verdict"]], zorder=3)
        ringed = (line["default"] == "true").to_numpy()
        ax.scatter(x[ringed], y[ringed], s=160, facecolors="none", edgecolors="black", zorder=4)
        ax.axhline(threshold_of(label), linestyle="--", color="0.2", linewidth=1)
        if not ordered:
            ax.set_xticks(range(len(order)), order)
            ax.set_xlim(-0.5, len(order) - 0.5)
        elif x.min() > 0 and x.max() / x.min() >= 8:
            ax.set_xscale("log", base=2)
        ax.set_title(label if column == 0 else "", fontsize="small", loc="left")
        ax.set_xlabel(knob if row == len(labels) - 1 else "")
    fig.suptitle(f"{claim} along the knobs that reach it (interval bars; dashed: the threshold; ringed: the "
                 "default; colour: the verdict)", fontsize="small")
    fig.tight_layout()
    return fig


def make_table(root: Path, rev: str = "HEAD", fewer: bool = False) -> list[str]:
    """reports/atlas/atlas.csv and atlas.png from commit `rev`'s run and its finished experiments, or their
    committed records where the experiments are not here; returns the names of the grid's points that have
    not run yet. Refuses (ArtifactError) to drop a measured point of the table in the workspace unless
    `fewer`."""
    raw = yaml.safe_load(git_file(root, rev, DEFAULT_PATH))
    # `rev`'s defaults with the workspace's grid: a line added after `rev` reads the experiments of it run at
    # `rev` (each is checked below to have run at its point's settings), and verify re-derives from that grid
    raw["atlas"] = read_params_file(root / DEFAULT_PATH)["atlas"]
    params = parse_params(raw)
    grid_points = points(params.atlas, raw)
    default_text = git_file(root, rev, artifact("claims"))
    default_run = run_digest(default_text)
    done, failures = experiments(root, rev)
    found = read_points(root, grid_points, done, default_run)
    found |= recorded_points(root, [point for point in grid_points if point not in found], default_run)
    found = {point: found[point] for point in grid_points if point in found}  # the grid's order
    failed_points = {point: failures[point.name] for point in grid_points
                     if point not in found and point.name in failures}
    rows = atlas_rows(json.loads(default_text)["claims"], raw, list(params.atlas.knobs), found, failed_points)
    read_back = [dict(zip(COLUMNS, map(str, row))) for row in rows]  # the rows as the written table reads
    table = root / artifact("atlas_table")
    if table.is_file() and not fewer:
        # a point the new table gains does not make up for one it loses
        dropped = measured_points(read_atlas(table)) - measured_points(read_back)
        if dropped:
            names = ", ".join(f"{knob}={value}" for knob, value in sorted(dropped))
            raise ArtifactError(f"{artifact('atlas_table')} measures {len(dropped)} points this table would not "
                                f"({names}: off the grid, or no experiment or record of this run here): "
                                "`dvc exp pull` them, or pass --fewer to cut them")
    write_table(table, COLUMNS, rows)
    set_theme(params.render.context)
    save_png(atlas_figure(rows), root / artifact("atlas_figure"), params.render.dpi)
    write_claim_figures(root, read_back, params.atlas.knobs, params.render.dpi)
    return [point.name for point in grid_points if point not in found and point not in failed_points]


def write_claim_figures(root: Path, rows: Sequence[Mapping[str, str]], grid: Mapping[str, Sequence[Any]],
                        dpi: int) -> None:
    """reports/atlas/claims/<claim>.png for every claim a point of a knob of `grid` (each to its values) that
    reaches it measured; the folder holds nothing else (a claim no point measures any more loses its figure)."""
    folder = root / artifact("atlas_claim_figures")
    reached = reached_lines((claim for paper in PAPERS for claim in paper.claims), grid)
    knobs = list(grid)
    made = set()
    for claim in dict.fromkeys(row["claim"] for row in rows):
        fig = claim_figure(rows, claim, [knob for knob in knobs if knob in reached.get(claim, ())])
        if fig is not None:
            save_png(fig, folder / f"{claim}.png", dpi)
            made.add(f"{claim}.png")
    for stale in folder.glob("*.png") if folder.is_dir() else ():
        if stale.name not in made:
            stale.unlink()


def rederive(root: Path) -> tuple[list[Problem], str | None]:
    """verify's check of the committed atlas: its table again from reports/claims.json and the committed
    records, compared line by line. (problems, None) when re-derived; ([], why) when it cannot be: no atlas
    made, or points of it without a record of this run (an atlas made before records were kept)."""
    table = root / artifact("atlas_table")
    rows = read_atlas(table) if table.is_file() else []
    if not rows:
        return [], "no atlas made"
    raw = read_params_file(root / DEFAULT_PATH)
    params = parse_params(raw)
    default_text = (root / artifact("claims")).read_text()
    found = recorded_points(root, points(params.atlas, raw), run_digest(default_text))
    unrecorded = measured_points(rows) - {(point.knob, value_text(point.value)) for point in found}
    if unrecorded:
        return [], (f"{len(unrecorded)} of its {len(measured_points(rows))} points have no record of this run's "
                    f"claims in {artifact('atlas_points')}/ (made before records were kept, or on another run)")
    failures = {(row["knob"], row["value"]): row["failure"] for row in rows if row["claim_verdict"] == NOT_MEASURED}
    failed = {point: failures[point.knob, value_text(point.value)] for point in points(params.atlas, raw)
              if point not in found and (point.knob, value_text(point.value)) in failures}
    again = atlas_rows(json.loads(default_text)["claims"], raw, list(params.atlas.knobs), found, failed)
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows([COLUMNS, *again])  # as write_table writes it
    if text.getvalue() == table.read_text():
        return [], None
    return [Problem(artifact("atlas_table"), f"{artifact('atlas_table')} differs from the table its records and "
                    f"{artifact('claims')} make: remake it with `python -m vitheory.atlas table`")], None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vitheory.atlas", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    queue = commands.add_parser("queue", help="queue every point of the grid not yet run as a DVC experiment")
    queue.add_argument("--dry", action="store_true", help="print the commands, queue nothing")
    table = commands.add_parser("table", help="the atlas table and figure from HEAD's run and its experiments")
    table.add_argument("--rev", default="HEAD", help="the commit whose run and experiments to read (default HEAD): "
                       "experiments belong to the commit they were queued from")
    table.add_argument("--fewer", action="store_true",
                       help="write the table even if it drops measured points of the one in the workspace")
    args = parser.parse_args(argv)
    root = Path.cwd()
    try:
        if args.command == "table":
            missing = make_table(root, args.rev, args.fewer)
            print(f"{artifact('atlas_table')}, {artifact('atlas_figure')} written"
                  + (f"; not run yet: {', '.join(missing)}" if missing else "; every point of the grid ran"))
            return 0
        grid_points, done = checked_points(read_params_file(root / DEFAULT_PATH)), experiments(root)[0]
        seconds = stage_seconds(read_stage_times(root))
        left = [point for point in grid_points if point.name not in done]
        for point, command in zip(left, queue_commands(grid_points, done)):
            print(f"{shlex.join(command)}  # {point_cost(point, seconds)}")
            if not args.dry:
                subprocess.run([sys.executable, "-m", *command], cwd=root, check=True)
    except VitheoryError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
