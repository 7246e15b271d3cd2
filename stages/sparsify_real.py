"""Stage `sparsify_real`: attention-guided token sparsification of the trained ViT on real images, and
the spurious-patch test (claim LI-5)."""

import argparse

from vitheory.core.artifacts import write_json, write_table
from vitheory.core.checkpoint import load_checkpoint, seed_folder
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.device import DEVICE, resolve_device
from vitheory.core.errors import ParamsError
from vitheory.core.paths import artifact, run_name
from vitheory.images.params import RealTrainParams, RecipeParams
from vitheory.images.training import build_model, load_images
from vitheory.li23.params import SparsifyRealParams
from vitheory.li23.token_keeping import COLUMNS, natural_runs, spurious_runs

PARAMS = {"train.device": DEVICE, "sparsify_real": SparsifyRealParams, "real": RealTrainParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    cfg, real = params.sparsify_real, RecipeParams.of(params.real)
    device = resolve_device(params.train.device)
    data = load_images(artifact("images"), ("train", "test"), device)
    models = [load_checkpoint(artifact("real_models") / run_name("vit", "natural") / seed_folder(seed), device.type)
              for seed in range(real.seeds)]
    patches = models[0].n_patches
    if max(cfg.keep_tokens) > patches:
        raise ParamsError(f"sparsify_real.keep_tokens = {list(cfg.keep_tokens)} is not allowed: must be <= the "
                          f"ViT's {patches} patch tokens (every element)")
    rows = natural_runs(models, data.x, data.y, real, cfg)
    rows += spurious_runs(lambda: build_model(params.real.models.vit, data.image_size, data.channels, data.n_classes),
                          data.x, data.y, real, seeds=real.seeds, epochs=cfg.spurious.epochs,
                          correlation=cfg.spurious.correlation, marker_value=float(data.x["train"].max()), marker_seed=cfg.spurious.seed,
                          n_classes=data.n_classes)
    write_table(artifact("sparsify_real_runs"), COLUMNS, rows)
    # the ViT's token count, which LI-5's regime names; its accuracies the claim computes from the runs
    write_json(artifact("sparsify_real_metrics"), {"device": device.type, "patches": patches})


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
