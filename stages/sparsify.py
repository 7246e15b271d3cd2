"""Stage `sparsify`: [LI23] Figure 2b, test loss after token removal by each strategy (LI-4).

One row per strategy, keep ratio and seed; strategy `none` is the full data. LI-4's claim computes its
means from the runs."""

import argparse

from vitheory.core.artifacts import write_table
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.paths import artifact
from vitheory.li23.params import SparsifyParams
from vitheory.li23.sparsify import COLUMNS, run

PARAMS = {"sparsify": SparsifyParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    rows = run(params.sparsify)
    write_table(artifact("sparsify_runs"), COLUMNS, ([row[column] for column in COLUMNS] for row in rows))


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
