"""Stage `phase_fit`: N_min(alpha*), steps to zero training error, and their exponents against
1/alpha* with bootstrap intervals, for every model of the phase diagram (LI-1, LI-2)."""

import argparse

from vitheory.core.artifacts import write_json
from vitheory.core.cli import run_stage
from vitheory.core.paths import artifact
from vitheory.li23.phase import fit_all
from vitheory.params import Params


def main(params: Params, args: argparse.Namespace) -> None:
    write_json(artifact("phase_metrics"), fit_all(params.phase.fit))


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__))
