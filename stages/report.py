"""Stage `report`: check every claim against its threshold; write claims.json and REPORT.md."""

import argparse
from pathlib import Path

from vitheory.artifacts import atomic_path, read_json, write_json
from vitheory.claims import evaluate_all
from vitheory.cli import run_stage
from vitheory.params import DEFAULT_PATH, Params
from vitheory.report import render_report, source_revision


def main(params: Params, args: argparse.Namespace) -> None:
    reports = Path(args.reports)
    records = evaluate_all(reports)
    sources = {"train_li_vit": "metrics/li_vit.json", "train_spatial": "metrics/spatial.json",
               "control": "metrics/control.json", "transfer": "metrics/transfer.json",
               "train_real@vit-natural": "real/vit_natural.json", "sparsify_real": "metrics/sparsify_real.json",
               "pk_train": "metrics/pk_train.json", "pk_analysis": "metrics/pk.json"}
    devices = {stage: read_json(reports / path, stage)["device"] for stage, path in sources.items()}
    write_json(reports / "claims.json", {"claims": records})
    with atomic_path(reports / "REPORT.md") as tmp:
        tmp.write_text(render_report(records, params, DEFAULT_PATH.read_text(), devices, source_revision(Path.cwd())))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reports", required=True,
                        help="reports folder: reads metrics/ and figures/, writes claims.json, REPORT.md")
    run_stage(main, parser)
