"""Stage `pk_train`: [PK22]'s extra trainings with train_real's recipe and seeds: the ViT and the CNN on
class-balanced fractions of the training images (PK-1), AlterNet and a CNN of its depth (PK-6), and a
ViT with global average pooling (PK-2); with every model's training and test loss and error."""

import argparse
import sys
from dataclasses import asdict, replace
from pathlib import Path

import torch

from vitheory import images, pk
from vitheory.artifacts import atomic_path, write_json, write_table
from vitheory.checkpoint import load_checkpoint, save_checkpoint
from vitheory.cli import run_stage
from vitheory.ensemble import resolve_device, seeded
from vitheory.params import Params
from vitheory.real import build_model, evaluate, fit, load_images
from vitheory.resume import Resume, fingerprint
from vitheory.schemas import PK_TRAIN_RUNS


def main(params: Params, args: argparse.Namespace) -> None:
    cfg, real = params.pk_train, params.real
    device = resolve_device(params.train.device)
    data = load_images(args.data, ("train", "test"), device)
    x, y = data.x, data.y
    runs = []

    def record(name: str, fraction: float, seed: int, model: torch.nn.Module, index: torch.Tensor) -> None:
        train = evaluate(model, x["train"][index], y["train"][index])
        test = evaluate(model, x["test"], y["test"])
        runs.append((name, fraction, seed, train["loss"], 1 - train["accuracy"], test["loss"], 1 - test["accuracy"]))

    everything = torch.arange(len(y["train"]), device=device)
    for name in ("vit", "cnn"):  # the full-data models are train_real's
        for seed in range(real.seeds):
            model = load_checkpoint(Path(args.real) / f"{name}_natural" / f"seed_{seed}",
                                    f"train_real@{name}-natural", device.type)
            record(name, 1.0, seed, model, everything)
    presets = {"vit": real.models.vit, "cnn": real.models.cnn, "alternet": cfg.alternet,
               "cnn_baseline": cfg.cnn_baseline, "vit_gap": replace(real.models.vit, pool="gap")}
    jobs = [(f"{name}_fraction_{fraction:g}", name, fraction) for fraction in cfg.fractions for name in ("vit", "cnn")]
    jobs += [(name, name, 1.0) for name in ("alternet", "cnn_baseline", "vit_gap")]
    inputs = [args.data, *(Path(args.real) / f"{name}_natural" for name in ("vit", "cnn"))]
    resume = Resume(args.resume, fingerprint({"pk_train": asdict(cfg), "real": asdict(real), "device": device.type},
                                             inputs), "pk_train")
    with atomic_path(args.models) as models:
        models.mkdir()
        for folder, name, fraction in jobs:
            generator = torch.Generator().manual_seed(params.images.seed)
            index = (images.balanced_subset(y["train"].cpu(), fraction, generator).to(device) if fraction < 1
                     else everything)
            for seed in range(real.seeds):
                model = seeded(seed, lambda name=name: build_model(presets[name], data.image_size, data.channels,
                                                                   data.n_classes)).to(device)
                state = resume.run(f"{folder}_seed_{seed}")
                if state.epoch:
                    print(f"{folder} seed {seed}: resuming after epoch {state.epoch} of {real.epochs}",
                          file=sys.stderr)
                fit(model, x["train"][index], y["train"][index], real, epochs=real.epochs, seed=seed,
                    state=state, desc=f"{folder} seed {seed}")
                record(name, fraction, seed, model, index)
                save_checkpoint(Path(models) / folder / f"seed_{seed}", model.cpu(), {
                    "stage": "pk_train", "model": name, "fraction": fraction, "seed": seed,
                    "train": asdict(real), "data": asdict(params.images), "device": device.type})
    resume.finish()
    write_table(args.out, PK_TRAIN_RUNS, runs)
    write_json(args.metrics, {"device": device.type} | pk.training_summary(runs))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True, help="folder written by prepare_images")
    parser.add_argument("--real", required=True, help="folder of train_real's checkpoints (models/real)")
    parser.add_argument("--models", required=True, help="folder for the new checkpoints")
    parser.add_argument("--resume", required=True, help="folder of the resumable training state")
    parser.add_argument("--out", required=True, help="long-form CSV of the runs")
    parser.add_argument("--metrics", required=True, help="summary metrics JSON to write")
    run_stage(main, parser)
