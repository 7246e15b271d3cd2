"""Stage `phase_fit`: N_min(alpha*), steps to zero test error, and their exponents against 1/alpha*
(point estimates; the claims LI-1 and LI-2 compute their intervals), for every model of the phase
diagram, and the alpha* of each grid outside Theorem 1's premise."""

import argparse

from vitheory.core.artifacts import write_json
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.paths import artifact
from vitheory.li23.params import PhaseParams
from vitheory.li23.phase import fit_all

PARAMS = {"phase": PhaseParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    write_json(artifact("phase_metrics"), fit_all(params.phase))


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
