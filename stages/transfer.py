"""Stage `transfer`: fine-tune the pre-trained positional attention to a new feature against training
from scratch, over downstream sample sizes and seeds (claim JSL-4)."""

import argparse
from pathlib import Path

import torch

from vitheory import spatial
from vitheory.artifacts import write_json, write_table
from vitheory.checkpoint import load_checkpoint
from vitheory.cli import run_stage
from vitheory.ensemble import resolve_device
from vitheory.jsl import samples_needed, transfer_runs
from vitheory.params import Params
from vitheory.schemas import TRANSFER_RUNS


def main(params: Params, args: argparse.Namespace) -> None:
    cfg, data_cfg = params.transfer, params.generate.spatial
    structure = spatial.load(args.data, "structure", ("sets", "w_star"))
    pretrained = [load_checkpoint(Path(args.models) / "vit" / f"seed_{seed}", "train_spatial")
                  for seed in range(params.spatial.seeds)]
    generator = torch.Generator().manual_seed(cfg.seed)
    feature = spatial.orthogonal_feature(structure["w_star"], generator)
    pool = spatial.sample(max(cfg.n_train), data_cfg, structure["sets"], feature, generator)
    test = spatial.sample(cfg.n_test, data_cfg, structure["sets"], feature, generator)
    device = resolve_device(params.train.device)
    runs = transfer_runs(pretrained, params.spatial.vit, params.spatial, cfg, (pool.X, pool.y), (test.X, test.y),
                         device)
    write_table(args.out, TRANSFER_RUNS, runs)
    needed = {method: samples_needed(runs, method, cfg.target_error) for method in ("finetune", "scratch")}
    write_json(args.metrics, {"device": device.type, "target_error": cfg.target_error,
                              "feature_overlap": abs(float(feature @ structure["w_star"])),
                              "finetune_n_needed": needed["finetune"], "scratch_n_needed": needed["scratch"],
                              "largest_n": max(cfg.n_train), "diverged_runs": sum(run[-1] for run in runs)})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True, help="folder written by generate_spatial")
    parser.add_argument("--models", required=True, help="checkpoint folder written by train_spatial")
    parser.add_argument("--out", required=True, help="long-form CSV of the runs")
    parser.add_argument("--metrics", required=True, help="summary metrics JSON to write")
    run_stage(main, parser)
