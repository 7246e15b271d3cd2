"""Stage `sparsify`: [LI23] Figure 2b, test loss after token removal by each strategy (LI-4).

The metrics are means over keep ratios and seeds per strategy; strategy `none` is the full data."""

import argparse
import csv
from collections import defaultdict
from statistics import mean

from vitheory.artifacts import atomic_path, write_json
from vitheory.cli import run_stage
from vitheory.params import Params
from vitheory.schemas import SPARSIFY_RUNS
from vitheory.sparsify import run


def main(params: Params, args: argparse.Namespace) -> None:
    rows = run(params.sparsify)
    with atomic_path(args.out) as tmp, open(tmp, "w", newline="") as handle:
        writer = csv.DictWriter(handle, SPARSIFY_RUNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    losses, errors = defaultdict(list), defaultdict(list)
    for row in rows:
        losses[row["strategy"]].append(row["test_loss"])
        errors[row["strategy"]].append(row["test_error"])
    write_json(args.metrics, {
        "mean_test_loss": {s: mean(v) for s, v in losses.items()},
        "mean_test_error": {s: mean(v) for s, v in errors.items()},
    })


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, help="long-form CSV of every run")
    parser.add_argument("--metrics", required=True, help="summary metrics JSON")
    run_stage(main, parser)
