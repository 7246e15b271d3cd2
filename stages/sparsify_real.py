"""Stage `sparsify_real`: attention-guided token sparsification of the trained ViT on real images, and
the spurious-patch test (claim LI-5)."""

import argparse
from dataclasses import replace
from pathlib import Path

from vitheory.artifacts import write_json, write_table
from vitheory.checkpoint import load_checkpoint
from vitheory.cli import run_stage
from vitheory.ensemble import resolve_device
from vitheory.errors import ParamsError
from vitheory.params import Params
from vitheory.real import build_model, evaluate, load_images
from vitheory.real_sparsify import STRATEGIES, finetune_sparsified, sparsified_accuracy, spurious_runs, summarize
from vitheory.schemas import SPARSIFY_REAL_RUNS


def main(params: Params, args: argparse.Namespace) -> None:
    cfg, real = params.sparsify_real, params.real
    device = resolve_device(params.train.device)
    data = load_images(args.data, ("train", "test"), device)
    x, y = data.x, data.y
    finetune_cfg = replace(real, lr=cfg.finetune_lr)
    models = [load_checkpoint(Path(args.models) / f"seed_{seed}", "train_real@vit-natural", device.type)
              for seed in range(real.seeds)]
    patches = models[0].n_patches
    if max(cfg.keep_tokens) > patches:
        raise ParamsError(f"sparsify_real.keep_tokens = {list(cfg.keep_tokens)} is not allowed: must be <= the "
                          f"ViT's {patches} patch tokens (every element)")
    half = patches // 2
    rows = []
    for seed, model in enumerate(models):
        rows.append(("natural", "all", patches, seed, 0, evaluate(model, x["test"], y["test"])["accuracy"]))
        for k in sorted(set(cfg.keep_tokens) | {half}, reverse=True):  # half: the claim's point
            for strategy in STRATEGIES:
                rows.append(("natural", strategy, k, seed, 0,
                             sparsified_accuracy(model, model, x["test"], y["test"], k, strategy, seed)))
                tuned = finetune_sparsified(model, x["train"], y["train"], finetune_cfg, k=k, strategy=strategy,
                                            epochs=cfg.finetune_epochs, seed=seed)
                rows.append(("natural", strategy, k, seed, 1,
                             sparsified_accuracy(tuned, model, x["test"], y["test"], k, strategy, seed)))
    rows += spurious_runs(lambda: build_model(real.models.vit, data.image_size, data.channels, data.n_classes), x, y,
                          real,
                          seeds=real.seeds, epochs=cfg.spurious.epochs, correlation=cfg.spurious.correlation,
                          keep=half, marker_value=float(x["train"].max()), marker_seed=cfg.spurious.seed,
                          n_classes=data.n_classes)
    write_table(args.out, SPARSIFY_REAL_RUNS, rows)
    write_json(args.metrics, {"device": device.type} | summarize(rows, patches, half))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True, help="folder written by prepare_images")
    parser.add_argument("--models", required=True, help="checkpoints of the natural-image ViT (seed_<s>/)")
    parser.add_argument("--out", required=True, help="long-form CSV of the runs")
    parser.add_argument("--metrics", required=True, help="summary metrics JSON to write")
    run_stage(main, parser)
