"""Stage `phase_diagram@<grid>-<model>`: [LI23] Figure 1 for one model on one grid, every (alpha*, N, seed)
run as a row."""

import argparse

from vitheory.core.artifacts import write_table
from vitheory.core.cli import run_stage
from vitheory.core.device import resolve_device
from vitheory.core.paths import runs
from vitheory.li23.phase import COLUMNS, run_grid, runs_path
from vitheory.params import Params


def main(params: Params, args: argparse.Namespace) -> None:
    rows = run_grid(params.phase, args.grid, args.model, resolve_device(params.train.device))
    write_table(runs_path(args.grid, args.model), COLUMNS, ([row[column] for column in COLUMNS] for row in rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--grid", required=True, choices=runs("phase_grids"))
    parser.add_argument("--model", required=True, choices=runs("phase_models"))
    run_stage(main, parser)
