"""Stage `phase_diagram@<model>`: [LI23] Figure 1 for one model on every grid, every (alpha*, N, seed) run
as a row of its grid's table; a cell that several grids hold trains once."""

import argparse

from vitheory.core.artifacts import write_table
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.device import DEVICE, resolve_device
from vitheory.core.paths import runs
from vitheory.li23.params import PhaseParams
from vitheory.li23.phase import COLUMNS, run_grids, runs_path

PARAMS = {"train.device": DEVICE, "phase": PhaseParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    by_grid = run_grids(params.phase, runs("phase_grids"), args.model, resolve_device(params.train.device))
    for grid, rows in by_grid.items():
        write_table(runs_path(grid, args.model), COLUMNS, ([row[column] for column in COLUMNS] for row in rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, choices=runs("phase_models"))
    run_stage(main, parser, PARAMS)
