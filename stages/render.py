"""Stage `render`: the figures of the report, as PNG, from the logged series and run tables."""

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from vitheory import plots, schemas
from vitheory.artifacts import read_json, read_tensors
from vitheory.checkpoint import CHECKPOINT_CONFIG, load_checkpoint
from vitheory.cli import run_stage
from vitheory.params import Params
from vitheory.real import patch_order
from vitheory.spatial import cosine_similarity


def real_position_maps(natural: str, permuted: str) -> list[tuple[str, np.ndarray]]:
    """Cosine similarity of the patch encodings of the natural-image ViT and of the permuted-image
    ViT, the latter put back in the natural patch order when its permutation moved whole patches."""
    models = {name: load_checkpoint(Path(folder) / "seed_0", f"train_real@vit-{name}")
              for name, folder in (("natural", natural), ("permuted", permuted))}
    maps = [("natural images", cosine_similarity(models["natural"].P[-models["natural"].n_patches:]))]
    model = models["permuted"]
    encodings = model.P[-model.n_patches:]
    meta = json.loads((Path(permuted) / "seed_0" / CHECKPOINT_CONFIG).read_text())["metadata"]
    source = patch_order(torch.tensor(meta["permutation"]), model.config["image_size"], model.patch)
    if source is None:
        return maps + [("permuted images (as seen: the permutation splits patches)", cosine_similarity(encodings))]
    restored = torch.empty_like(encodings)
    restored[source] = encodings  # token i of a permuted image shows natural patch source[i]
    return maps + [("permuted images, put back in natural order", cosine_similarity(restored))]


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
    plots.save_figure(plots.similarity_maps_figure(
        [("at initialisation (seed 0)", gram["initial"][0].numpy()),
         ("after training (seed 0)", gram["final"][0].numpy())],
        cfg.association_threshold, "[JSL22] positional-encoding similarity: tile (r, c) is patch (r, c)'s similarity "
                                   "to every patch"), figures / "spatial_association.png", cfg.dpi)
    spatial_history = plots.read_table(args.spatial_history, schemas.HISTORY, "train_spatial")
    chance = read_json(args.spatial_metrics, "train_spatial")["chance"]
    plots.save_figure(plots.spatial_training_figure(spatial_history, chance), figures / "spatial_training.png",
                      cfg.dpi)
    real_runs = pd.DataFrame([{"model": summary["model"], "pixels": summary["pixels"], **run}
                              for summary in (read_json(path, "train_real") for path in args.real_metrics)
                              for run in summary["runs"].values()])
    plots.save_figure(plots.real_accuracy_figure(real_runs), figures / "real_accuracy.png", cfg.dpi)
    plots.save_figure(plots.similarity_maps_figure(real_position_maps(args.vit_natural, args.vit_permuted),
                                                   -1.0, "ViT positional encodings on real images (seed 0)"),
                      figures / "real_positional_maps.png", cfg.dpi)
    sparse_real = plots.read_table(args.sparsify_real, schemas.SPARSIFY_REAL_RUNS, "sparsify_real")
    plots.save_figure(plots.sparsify_real_figure(sparse_real), figures / "sparsify_real.png", cfg.dpi)

    pk_folder = Path(args.pk)
    plots.save_figure(plots.pk_features_figure(plots.read_table(pk_folder / "profiles.csv", schemas.PK_PROFILES,
                                                                "pk_analysis")), figures / "pk_features.png", cfg.dpi)
    plots.save_figure(plots.pk_noise_figure(plots.read_table(pk_folder / "noise.csv", schemas.PK_NOISE, "pk_analysis")),
                      figures / "pk_noise.png", cfg.dpi)
    plots.save_figure(plots.pk_small_data_figure(plots.read_table(args.pk_train, schemas.PK_TRAIN_RUNS, "pk_train")),
                      figures / "pk_small_data.png", cfg.dpi)
    plots.save_figure(plots.pk_hessian_figure(plots.read_table(pk_folder / "hessian.csv", schemas.PK_HESSIAN,
                                                               "pk_analysis")), figures / "pk_hessian.png", cfg.dpi)

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
    parser.add_argument("--real-metrics", nargs="+", required=True, help="summaries written by train_real")
    parser.add_argument("--vit-natural", required=True, help="checkpoints of the natural-image ViT")
    parser.add_argument("--vit-permuted", required=True, help="checkpoints of the permuted-image ViT")
    parser.add_argument("--sparsify-real", required=True, help="CSV written by sparsify_real")
    parser.add_argument("--pk", required=True, help="folder of tables written by pk_analysis")
    parser.add_argument("--pk-train", required=True, help="CSV written by pk_train")
    parser.add_argument("--figures", required=True, help="folder for the PNG figures")
    run_stage(main, parser)
