"""Stage `pk_train`: [PK22]'s extra trainings with train_real's recipe and seeds: the ViT and the CNN on
class-balanced fractions of the training images (PK-1), AlterNet (PK-6; its CNN of the same shape is
train_real's), and a ViT with global average pooling on the smallest fraction (PK-2); with every model's
training and test loss and error."""

import argparse
from dataclasses import asdict

from vitheory.core.artifacts import atomic_path, write_json, write_table
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView, as_dict
from vitheory.core.device import DEVICE, resolve_device
from vitheory.core.paths import artifact
from vitheory.core.resume import Resume, fingerprint
from vitheory.images.params import ImagesParams, RealTrainParams, RecipeParams
from vitheory.images.training import load_images
from vitheory.pk22.params import PKTrainParams
from vitheory.pk22.trainings import COLUMNS, FULL_DATA_MODELS, full_data_checkpoints, run_trainings

PARAMS = {"train.device": DEVICE, "pk_train": PKTrainParams, "real": RealTrainParams, "images": ImagesParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    cfg, real = params.pk_train, RecipeParams.of(params.real)
    device = resolve_device(params.train.device)
    data = load_images(artifact("images"), ("train", "test"), device)
    inputs = [artifact("images"), *(full_data_checkpoints(name) for name in FULL_DATA_MODELS)]
    resume = Resume(artifact("pk_resume"), fingerprint(
        {"pk_train": asdict(cfg), "real": asdict(real), "presets": as_dict(params.real.models),
         "device": device.type}, inputs))
    with atomic_path(artifact("pk_models")) as models:
        models.mkdir()
        runs = run_trainings(cfg, real, params.real.models, params.images.seed, data, device, models, resume)
    resume.finish()
    write_table(artifact("pk_train_runs"), COLUMNS, runs)
    write_json(artifact("pk_train_metrics"), {"device": device.type})


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
