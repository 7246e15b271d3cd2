"""Stage `report`: check every claim against its threshold; write claims.json and REPORT.md (with each
claim's "where it holds" from the atlas table, `python -m vitheory.atlas table`, once it has rows)."""

import argparse
from pathlib import Path

import yaml

from vitheory.core.artifacts import atomic_path, write_json
from vitheory.core.cli import PARAMS_FILE, run_stage
from vitheory.core.config import ParamsView
from vitheory.core.paths import artifact
from vitheory.atlas import not_run
from vitheory.grid import reached_lines, read_atlas, where_lines
from vitheory.papers import PAPERS
from vitheory.params import SECTIONS
from vitheory.report import deciding_numbers, devices, evaluate_all, render_report, source_revision, verdicts
from vitheory.reviewing import read_stage_times, stage_seconds

PARAMS = SECTIONS  # every section: the stage lists the whole params.yaml


def main(params: ParamsView, args: argparse.Namespace) -> None:
    root = Path(".")
    records = evaluate_all(root, params)
    write_json(artifact("claims"), {"claims": records})
    write_json(artifact("verdicts"), verdicts(records))
    write_json(artifact("measured"), deciding_numbers(records))
    raw = yaml.safe_load(PARAMS_FILE.read_text())
    rows = read_atlas(artifact("atlas_table"))
    reached = reached_lines((claim for paper in PAPERS for claim in paper.claims), params.atlas.knobs)
    atlas = where_lines(rows, reached, not_run(raw, rows, stage_seconds(read_stage_times(root))),
                        params.report.confidence)
    for claim, lines in atlas.items():
        figure = artifact("atlas_claim_figures") / f"{claim}.png"
        if figure.is_file():  # made with the table (`python -m vitheory.atlas table`)
            lines.append(f"its numbers along these knobs: ![{claim} along the knobs that reach it]"
                         f"({figure.relative_to(artifact('report').parent).as_posix()})")
    with atomic_path(artifact("report")) as tmp:
        tmp.write_text(render_report(records, params, PARAMS_FILE.read_text(), devices(root),
                                     source_revision(Path.cwd()), atlas))


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
