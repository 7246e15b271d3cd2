"""Stage `sparsify`: [LI23] Figure 2b, test loss after token removal by each strategy (LI-4).

The metrics are means over keep ratios and seeds per strategy; strategy `none` is the full data."""

import argparse

from vitheory.core.artifacts import write_json, write_table
from vitheory.core.cli import run_stage
from vitheory.core.paths import artifact
from vitheory.li23.sparsify import COLUMNS, run, summarize
from vitheory.params import Params


def main(params: Params, args: argparse.Namespace) -> None:
    rows = run(params.sparsify)
    write_table(artifact("sparsify_runs"), COLUMNS, ([row[column] for column in COLUMNS] for row in rows))
    write_json(artifact("sparsify_metrics"), summarize(rows))


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__))
