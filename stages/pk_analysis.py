"""Stage `pk_analysis`: [PK22]'s analyses of the trained image models: Fourier and spatial variance of
every block's feature maps (PK-3, PK-4; ViT, CNN, AlterNet), accuracy under band-passed noise (PK-5;
ViT, CNN) and Hessian spectra on training mini-batches (PK-2; ViT, CNN, ViT with global average
pooling, ViT on the smallest data fraction)."""

import argparse
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from vitheory import pk
from vitheory.artifacts import write_json, write_table
from vitheory.checkpoint import load_checkpoint
from vitheory.cli import run_stage
from vitheory.ensemble import resolve_device
from vitheory.params import Params
from vitheory.real import load_images
from vitheory.schemas import PK_HESSIAN, PK_NOISE, PK_PROFILES


def main(params: Params, args: argparse.Namespace) -> None:
    cfg = params.pk
    device = resolve_device(params.train.device)
    data = load_images(args.data, ("train", "test"), device)
    x_test, y_test = data.x["test"][:cfg.n_images], data.y["test"][:cfg.n_images]
    x_train, y_train = data.x["train"], data.y["train"]
    smallest = f"vit_fraction_{min(params.pk_train.fractions):g}"
    sources = {"vit": (Path(args.real) / "vit_natural", "train_real@vit-natural"),
               "cnn": (Path(args.real) / "cnn_natural", "train_real@cnn-natural"),
               "alternet": (Path(args.pk_models) / "alternet", "pk_train"),
               "vit_gap": (Path(args.pk_models) / "vit_gap", "pk_train"),
               "vit_small": (Path(args.pk_models) / smallest, "pk_train")}
    profiles, noise_rows, hessian_rows = [], [], []
    for name, (folder, stage) in sources.items():
        for seed in range(params.real.seeds):
            model = load_checkpoint(folder / f"seed_{seed}", stage, device.type)
            if name in ("vit", "cnn", "alternet"):
                profiles += [(name, seed, r["index"], r["kind"], r["depth"], r["high_frequency"], r["variance"])
                             for r in pk.block_profile(model, x_test)]
            if name in ("vit", "cnn"):
                clean = pk.noisy_accuracy(model, x_test, y_test, torch.zeros_like(x_test))
                generator = torch.Generator().manual_seed(cfg.noise_seed)
                for frequency in cfg.frequencies:
                    noise = pk.band_noise(tuple(x_test.shape), frequency, cfg.bandwidth, cfg.noise_rms,
                                          generator).to(device)
                    noise_rows.append((name, seed, frequency, clean - pk.noisy_accuracy(model, x_test, y_test, noise)))
            if name == "alternet":
                continue
            order = torch.randperm(len(y_train), generator=torch.Generator().manual_seed(cfg.hessian_seed))
            for batch in tqdm(range(cfg.hessian_batches), desc=f"Hessian {name} seed {seed}", mininterval=1.0):
                index = order[batch * cfg.hessian_batch_size:(batch + 1) * cfg.hessian_batch_size].to(device)
                operator = pk.hessian_operator(model, F.cross_entropy, x_train[index], y_train[index])
                eigenvalues = pk.top_eigenvalues(operator, cfg.hessian_top, cfg.hessian_seed + batch,
                                                 cfg.hessian_tol)
                hessian_rows += [(name, seed, batch, rank, float(value)) for rank, value in enumerate(eigenvalues)]
    write_table(Path(args.out) / "profiles.csv", PK_PROFILES, profiles)
    write_table(Path(args.out) / "noise.csv", PK_NOISE, noise_rows)
    write_table(Path(args.out) / "hessian.csv", PK_HESSIAN, hessian_rows)
    write_json(args.metrics, {"device": device.type} | pk.summarize(profiles, noise_rows, hessian_rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True, help="folder written by prepare_images")
    parser.add_argument("--real", required=True, help="folder of train_real's checkpoints (models/real)")
    parser.add_argument("--pk-models", required=True, help="folder of pk_train's checkpoints (models/pk)")
    parser.add_argument("--out", required=True, help="folder for profiles.csv, noise.csv, hessian.csv")
    parser.add_argument("--metrics", required=True, help="summary metrics JSON to write")
    run_stage(main, parser)
