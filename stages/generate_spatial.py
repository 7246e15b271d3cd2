"""Stage `generate_spatial`: the [JSL22] spatially structured data, the same data model on the variant
partition, the negative control, and the same data model at the control's size (its positive control),
each a folder of train/test splits, the structure (sets and feature, or the teacher's filters) and
metadata."""

import argparse
from dataclasses import replace

from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.paths import artifact
from vitheory.jsl22 import data
from vitheory.jsl22.params import SpatialControlParams, SpatialDataParams

PARAMS = {"generate.spatial": SpatialDataParams, "generate.spatial_control": SpatialControlParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    cfg = params.generate.spatial
    data.write(cfg, artifact("spatial_data"))
    data.write(replace(cfg, partition=cfg.variant_partition), artifact("spatial_variant_data"))
    control = params.generate.spatial_control
    data.write_control(control, artifact("spatial_control_data"))
    data.write(data.positive_control_data(control, cfg), artifact("spatial_positive_data"))


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
