"""Stage `init_error`: [LI23]'s sample size against the initial model error at one alpha* and tau, the phase
diagram's ViT recipe from initial models of growing error, and its positive control (LI-7)."""

import argparse

from vitheory.core.artifacts import write_json, write_table
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.device import DEVICE, resolve_device
from vitheory.core.paths import artifact
from vitheory.li23.initial_error import COLUMNS, InitErrorParams, run_sweep, summarize
from vitheory.li23.params import PhaseParams

PARAMS = {"train.device": DEVICE, "init_error": InitErrorParams, "phase": PhaseParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    rows, record = run_sweep(params.init_error, params.phase, resolve_device(params.train.device))
    write_table(artifact("init_error_runs"), COLUMNS, ([row[column] for column in COLUMNS] for row in rows))
    write_json(artifact("init_error_metrics"), record | {
        "n_train": list(params.init_error.n_train), "success_rate_threshold": params.phase.fit.success_rate,
        "n_min": summarize(rows, params.phase.fit.success_rate)})


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
