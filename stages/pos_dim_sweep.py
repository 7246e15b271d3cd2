"""Stage `pos_dim_sweep`: the spatial recipe's positional-attention ViT over positional widths d_p, seeds
as one ensemble per width (described beside JSL-2)."""

import argparse

from vitheory.core.artifacts import write_table
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.device import DEVICE, resolve_device
from vitheory.core.ensemble import Stability
from vitheory.core.paths import artifact
from vitheory.jsl22.params import PosDimSweepParams, SpatialTrainParams
from vitheory.jsl22.pos_dim import COLUMNS, sweep
from vitheory.jsl22.training import read_spatial

PARAMS = {"train.device": DEVICE, "train.stability": Stability, "pos_dim_sweep": PosDimSweepParams,
          "spatial": SpatialTrainParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    train, test, structure = read_spatial(artifact("spatial_data"))
    rows = sweep(params.pos_dim_sweep, params.spatial, params.train.stability, train, test, structure["sets"],
                 resolve_device(params.train.device))
    write_table(artifact("pos_dim_runs"), COLUMNS, ([row[column] for column in COLUMNS] for row in rows))


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
