"""Stage `pk_locality`: [PK22] PK-12's trainings: the ViT with its attention in k x k windows of its grid of
patches, one per window and seed, by train_real's recipe; the test accuracy of each, of train_real's global
ViT and of the control (the smallest window's ViT with its windows moved off their neighbours)."""

import argparse

from vitheory.core.artifacts import atomic_path, write_json, write_table
from vitheory.core.checkpoint import load_checkpoint, seed_folder
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.device import DEVICE, resolve_device
from vitheory.core.paths import artifact
from vitheory.images.params import RealTrainParams, RecipeParams
from vitheory.images.training import load_images
from vitheory.pk22.locality import (COLUMNS, CONTROL, GLOBAL, LocalityParams, accuracy_row, model_name, off_grid,
                                    train_windows)
from vitheory.pk22.trainings import full_data_checkpoints

PARAMS = {"train.device": DEVICE, "pk_locality": LocalityParams, "real": RealTrainParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    cfg, real = params.pk_locality, RecipeParams.of(params.real)
    device = resolve_device(params.train.device)
    data = load_images(artifact("images"), ("train", "test"), device)
    x, y = data.x["test"], data.y["test"]
    with atomic_path(artifact("pk_locality_models")) as folder:
        folder.mkdir()
        trained = train_windows(params.real.models.vit, cfg.windows, real, data, device, folder)
    rows = [accuracy_row(GLOBAL, seed, 0, load_checkpoint(full_data_checkpoints(GLOBAL) / seed_folder(seed),
                                                          device.type), x, y) for seed in range(real.seeds)]
    rows += [accuracy_row(model_name(window), seed, window, model, x, y)
             for window, models in trained.items() for seed, model in enumerate(models)]
    smallest = min(cfg.windows)
    rows += [accuracy_row(CONTROL, seed, smallest, off_grid(model, cfg.seed), x, y)
             for seed, model in enumerate(trained[smallest])]
    write_table(artifact("pk_locality_table"), COLUMNS, rows)
    write_json(artifact("pk_locality_metrics"), {"device": device.type, "windows": list(cfg.windows),
                                                 "control_window": smallest})


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
