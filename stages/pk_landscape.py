"""Stage `pk_landscape`: [PK22] Fig. 1's loss landscape (PK-10): filter-normalised slices (a plane, lines,
and the permutation line, the control) around the trained ViT, CNN and AlterNet of every seed, forward
passes only, on one fixed augmented batch of training images."""

import argparse

from tqdm import tqdm

from vitheory.core.artifacts import write_json, write_table
from vitheory.core.checkpoint import load_checkpoint, seed_folder
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.device import DEVICE, resolve_device
from vitheory.core.paths import artifact
from vitheory.images.params import RealTrainParams
from vitheory.images.training import load_images
from vitheory.pk22.landscape import COLUMNS, MODELS, LandscapeParams, fixed_batch, landscape_rows
from vitheory.pk22.trainings import full_data_checkpoints

PARAMS = {"train.device": DEVICE, "pk_landscape": LandscapeParams, "real": RealTrainParams}
FOLDERS = {"vit": lambda: full_data_checkpoints("vit"), "cnn": lambda: full_data_checkpoints("cnn"),
           "alternet": lambda: artifact("pk_models") / "alternet"}  # pk_train's AlterNet on all the data


def main(params: ParamsView, args: argparse.Namespace) -> None:
    cfg, real = params.pk_landscape, params.real
    device = resolve_device(params.train.device)
    data = load_images(artifact("images"), ("train",), device)
    x, y = fixed_batch(data.x["train"], data.y["train"], cfg.n_images, real.shift, real.hflip, cfg.seed)
    rows = []
    with tqdm(total=len(MODELS) * real.seeds, desc="pk_landscape (model, seed)", mininterval=1.0) as progress:
        for name in MODELS:
            for seed in range(real.seeds):
                model = load_checkpoint(FOLDERS[name]() / seed_folder(seed), device.type)
                rows += landscape_rows(name, seed, model, x, y, cfg)
                progress.update()
    write_table(artifact("pk_landscape_table"), COLUMNS, rows)
    # what the claim weighs and matches the slices by (its settings), with the device
    write_json(artifact("pk_landscape_metrics"), {"device": device.type, "weight_decay": real.weight_decay,
                                                  "loss_rise": cfg.loss_rise, "tolerance": cfg.tolerance,
                                                  "extent": cfg.extent})


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
