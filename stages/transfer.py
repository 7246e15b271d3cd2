"""Stage `transfer`: fine-tune the pre-trained positional attention to a new feature against training
from scratch, over downstream sample sizes and seeds (claim JSL-4)."""

import argparse

from vitheory.core.artifacts import read_split, write_json, write_table
from vitheory.core.checkpoint import checkpoint_metadata, load_checkpoint
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.device import DEVICE, resolve_device
from vitheory.core.ensemble import Stability
from vitheory.core.paths import artifact
from vitheory.jsl22.params import SpatialDataParams, SpatialTrainParams, TransferParams
from vitheory.jsl22.training import TRANSFER_COLUMNS, downstream_data, member_folder, transfer_runs

PARAMS = {"train.device": DEVICE, "train.stability": Stability, "transfer": TransferParams,
          "generate.spatial": SpatialDataParams, "spatial": SpatialTrainParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    cfg = params.transfer
    structure = read_split(artifact("spatial_data"), "structure", ("sets", "w_star"))
    folders = [artifact("spatial_models") / member_folder("vit", seed) for seed in range(params.spatial.seeds)]
    pretrained = [load_checkpoint(folder) for folder in folders]
    pretraining_unstable = [checkpoint_metadata(folder)["unstable"] for folder in folders]
    feature, pool, test = downstream_data(cfg, params.generate.spatial, structure)
    device = resolve_device(params.train.device)
    runs = transfer_runs(pretrained, pretraining_unstable, params.spatial.vit, params.spatial, cfg,
                         params.train.stability, pool, test, device)
    write_table(artifact("transfer_runs"), TRANSFER_COLUMNS, runs)
    # settings only: the claim counts the samples needed from the runs table
    write_json(artifact("transfer_metrics"), {
        "device": device.type, "target_error": cfg.target_error,
        "feature_overlap": abs(float(feature @ structure["w_star"])), "largest_n": max(cfg.n_train)})


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
