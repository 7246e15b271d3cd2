"""Stage `pk_frequency`: [PK22] PK-11: the natural-image ViT's and CNN's test accuracy on low- and
high-passed test images and on cue conflicts (low-pass of one digit, high-pass of another), and the
positive control, the CNN trained on low-passed images, read the same way."""

import argparse

from vitheory.core.artifacts import atomic_path, write_json, write_table
from vitheory.core.checkpoint import load_checkpoint, seed_folder
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.device import DEVICE, resolve_device
from vitheory.core.paths import artifact
from vitheory.images.params import RealTrainParams, RecipeParams
from vitheory.images.training import load_images
from vitheory.pk22.frequency import COLUMNS, CONTROL, MODELS, FrequencyParams, frequency_rows, train_control
from vitheory.pk22.trainings import full_data_checkpoints

PARAMS = {"train.device": DEVICE, "pk_frequency": FrequencyParams, "real": RealTrainParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    cfg, real = params.pk_frequency, RecipeParams.of(params.real)
    device = resolve_device(params.train.device)
    data = load_images(artifact("images"), ("train", "test"), device)
    x, y = data.x["test"], data.y["test"]
    rows = []
    for name in MODELS:
        for seed in range(real.seeds):
            model = load_checkpoint(full_data_checkpoints(name) / seed_folder(seed), device.type)
            rows += frequency_rows(name, seed, model, x, y, cfg)
    with atomic_path(artifact("pk_frequency_models")) as folder:
        folder.mkdir()
        controls = train_control(params.real.models.cnn, real, cfg, data, device, folder)
    for seed, model in enumerate(controls):
        rows += frequency_rows(CONTROL, seed, model, x, y, cfg)
    write_table(artifact("pk_frequency_table"), COLUMNS, rows)
    # what the claim reads the control and chance by (its settings), with the device
    write_json(artifact("pk_frequency_metrics"), {"device": device.type, "classes": data.n_classes,
                                                  "control_cutoff": cfg.control_cutoff})


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
