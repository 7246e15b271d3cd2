"""Stage `report`: check every claim against its threshold; write claims.json and REPORT.md (with each
claim's "where it holds" from the atlas table, `python -m vitheory.atlas table`, once it has rows)."""

import argparse
from pathlib import Path

from vitheory.core.artifacts import atomic_path, write_json
from vitheory.core.cli import PARAMS_FILE, run_stage
from vitheory.core.config import ParamsView
from vitheory.core.paths import artifact
from vitheory.grid import read_atlas, where_lines
from vitheory.params import SECTIONS

PARAMS = SECTIONS  # every section: the stage lists the whole params.yaml
from vitheory.report import deciding_numbers, devices, evaluate_all, render_report, source_revision, verdicts


def main(params: ParamsView, args: argparse.Namespace) -> None:
    root = Path(".")
    records = evaluate_all(root, params)
    write_json(artifact("claims"), {"claims": records})
    write_json(artifact("verdicts"), verdicts(records))
    write_json(artifact("measured"), deciding_numbers(records))
    with atomic_path(artifact("report")) as tmp:
        tmp.write_text(render_report(records, params, PARAMS_FILE.read_text(), devices(root),
                                     source_revision(Path.cwd()), where_lines(read_atlas(artifact("atlas_table")))))


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
