"""Stage `phase_diagram@<model>`: [LI23] Figure 1 for one model, every (alpha*, N, seed) run as a row."""

import argparse
import csv

from vitheory.artifacts import atomic_path
from vitheory.cli import run_stage
from vitheory.ensemble import resolve_device
from vitheory.params import Params
from vitheory.phase import COLUMNS, run_grid


def main(params: Params, args: argparse.Namespace) -> None:
    rows = run_grid(params.phase, args.model, resolve_device(params.train.device))
    with atomic_path(args.out) as tmp, open(tmp, "w", newline="") as handle:
        writer = csv.DictWriter(handle, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, choices=["vit", "cnn"])
    parser.add_argument("--out", required=True, help="long-form CSV of the runs")
    run_stage(main, parser)
