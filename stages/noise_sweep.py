"""Stage `noise_sweep`: [LI23]'s sample size against the token noise tau at one alpha*, the phase diagram's
ViT recipe over a few noise radii (LI-6)."""

import argparse

from vitheory.core.artifacts import write_table
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.device import DEVICE, resolve_device
from vitheory.core.paths import artifact
from vitheory.li23.noise_sweep import COLUMNS, run_sweep
from vitheory.li23.params import NoiseSweepParams, PhaseParams

PARAMS = {"train.device": DEVICE, "noise_sweep": NoiseSweepParams, "phase": PhaseParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    rows = run_sweep(params.noise_sweep, params.phase, resolve_device(params.train.device))
    write_table(artifact("noise_sweep_runs"), COLUMNS, ([row[column] for column in COLUMNS] for row in rows))


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
