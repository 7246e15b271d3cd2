"""Stage `render`: the figures of the report, as PNG, from the logged series and run tables."""

import argparse
from pathlib import Path

import pandas as pd

from vitheory import plots, schemas
from vitheory.artifacts import read_json, read_tensors
from vitheory.cli import run_stage
from vitheory.params import Params


def main(params: Params, args: argparse.Namespace) -> None:
    cfg = params.render
    plots.set_theme(cfg.context)
    figures = Path(args.figures)

    li_history = plots.read_table(args.history, schemas.HISTORY, "train_li_vit")
    reference = read_json(args.metrics, "train_li_vit")["reference"]
    plots.save_figure(plots.attention_mass_figure(li_history, **reference),
                      figures / "li_vit_attention.png", cfg.dpi)
    plots.save_figure(plots.training_curves_figure(li_history), figures / "li_vit_training.png", cfg.dpi)

    runs = pd.concat([plots.read_table(path, schemas.PHASE_RUNS, "phase_diagram") for path in args.phase_runs])
    plots.save_figure(plots.phase_diagram_figure(runs), figures / "phase_diagram.png", cfg.dpi)
    plots.save_figure(plots.scaling_figure(read_json(args.phase_fit, "phase_fit")),
                      figures / "phase_scaling.png", cfg.dpi)

    sparse = plots.read_table(args.sparsify, schemas.SPARSIFY_RUNS, "sparsify")
    plots.save_figure(plots.sparsify_figure(sparse), figures / "sparsify.png", cfg.dpi)

    gram = read_tensors(args.gram, "train_spatial", ("initial", "final"))
    plots.save_figure(plots.association_maps_figure(gram["initial"][0].numpy(), gram["final"][0].numpy(),
                                                    cfg.association_threshold, seed=0),
                      figures / "spatial_association.png", cfg.dpi)
    spatial_history = plots.read_table(args.spatial_history, schemas.HISTORY, "train_spatial")
    chance = read_json(args.spatial_metrics, "train_spatial")["chance"]
    plots.save_figure(plots.spatial_training_figure(spatial_history, chance), figures / "spatial_training.png",
                      cfg.dpi)
    transfer = plots.read_table(args.transfer, schemas.TRANSFER_RUNS, "transfer")
    plots.save_figure(plots.transfer_figure(transfer, params.transfer.target_error), figures / "transfer.png",
                      cfg.dpi)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--history", required=True, help="long-form CSV written by train_li_vit")
    parser.add_argument("--metrics", required=True, help="summary metrics written by train_li_vit")
    parser.add_argument("--phase-runs", nargs="+", required=True, help="CSVs written by phase_diagram")
    parser.add_argument("--phase-fit", required=True, help="summary written by phase_fit")
    parser.add_argument("--sparsify", required=True, help="CSV written by sparsify")
    parser.add_argument("--gram", required=True, help="positional-encoding similarities written by train_spatial")
    parser.add_argument("--spatial-history", required=True, help="long-form CSV written by train_spatial")
    parser.add_argument("--spatial-metrics", required=True, help="summary metrics written by train_spatial")
    parser.add_argument("--transfer", required=True, help="CSV written by transfer")
    parser.add_argument("--figures", required=True, help="folder for the PNG figures")
    run_stage(main, parser)
