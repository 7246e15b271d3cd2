"""Stage `phase_fit`: N_min(alpha*), steps to zero training error, and their exponents against
1/alpha* with bootstrap intervals, for every model of the phase diagram (LI-1, LI-2)."""

import argparse
from pathlib import Path

from vitheory.artifacts import write_json
from vitheory.cli import run_stage
from vitheory.params import Params
from vitheory.phase import read_runs, summarize


def main(params: Params, args: argparse.Namespace) -> None:
    fit = params.phase.fit
    summary = {}
    for path in map(Path, args.runs):
        summary[path.stem] = summarize(read_runs(path), fit.success_rate, fit.bootstrap, fit.seed)
    write_json(args.out, {"success_rate_threshold": fit.success_rate, "models": summary})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("runs", nargs="+", help="CSVs written by phase_diagram, one per model (<model>.csv)")
    parser.add_argument("--out", required=True, help="summary metrics JSON")
    run_stage(main, parser)
