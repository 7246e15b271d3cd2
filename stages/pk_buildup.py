"""Stage `pk_buildup`: [PK22] PK-13's trainings: AlterNet with its attention blocks at the start of their
stages and at the model's end, one per seed, by train_real's recipe; the test accuracy of each, of train_real's
all-conv CNN, of pk_train's AlterNet (the official placement) and of the control (that AlterNet without its
closing attention block)."""

import argparse

from vitheory.core.artifacts import atomic_path, write_json, write_table
from vitheory.core.checkpoint import load_checkpoint, seed_folder
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.device import DEVICE, resolve_device
from vitheory.core.paths import artifact
from vitheory.images.params import RealTrainParams, RecipeParams
from vitheory.images.training import evaluate, load_images
from vitheory.pk22.buildup import (ALL_CONV, COLUMNS, CONTROL, STAGE_END, BuildUpParams, train_placements,
                                   without_closing_attention)
from vitheory.pk22.params import PKTrainParams
from vitheory.pk22.trainings import full_data_checkpoints

PARAMS = {"train.device": DEVICE, "pk_buildup": BuildUpParams, "real": RealTrainParams, "pk_train": PKTrainParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    real = RecipeParams.of(params.real)
    device = resolve_device(params.train.device)
    data = load_images(artifact("images"), ("train", "test"), device)
    x, y = data.x["test"], data.y["test"]
    with atomic_path(artifact("pk_buildup_models")) as folder:
        folder.mkdir()
        models = train_placements(params.pk_train.alternet, params.pk_buildup, real, data, device, folder)
    folders = {ALL_CONV: full_data_checkpoints(ALL_CONV), STAGE_END: artifact("pk_models") / "alternet"}
    for name, found in folders.items():
        models[name] = [load_checkpoint(found / seed_folder(seed), device.type) for seed in range(real.seeds)]
    models[CONTROL] = [without_closing_attention(model) for model in models[STAGE_END]]
    measured = {(name, seed): evaluate(model, x, y) for name, seeds in models.items() for seed, model in enumerate(seeds)}
    rows = [(name, seed, found["loss"], found["accuracy"]) for (name, seed), found in measured.items()]
    write_table(artifact("pk_buildup_table"), COLUMNS, rows)
    write_json(artifact("pk_buildup_metrics"), {"device": device.type})


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
