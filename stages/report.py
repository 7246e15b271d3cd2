"""Stage `report`: check every claim against its threshold; write claims.json and REPORT.md."""

import argparse
from pathlib import Path

from vitheory.artifacts import atomic_path, read_json, write_json
from vitheory.claims import evaluate_all
from vitheory.cli import run_stage
from vitheory.params import DEFAULT_PATH, Params
from vitheory.report import render_report


def main(params: Params, args: argparse.Namespace) -> None:
    reports = Path(args.reports)
    records = evaluate_all(reports)
    devices = {stage: read_json(reports / "metrics" / f"{name}.json", stage)["device"]
               for stage, name in (("train_li_vit", "li_vit"), ("train_spatial", "spatial"), ("control", "control"),
                                   ("transfer", "transfer"))}
    write_json(reports / "claims.json", {"claims": records})
    with atomic_path(reports / "REPORT.md") as tmp:
        tmp.write_text(render_report(records, params, DEFAULT_PATH.read_text(), devices))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reports", required=True,
                        help="reports folder: reads metrics/ and figures/, writes claims.json, REPORT.md")
    run_stage(main, parser)
