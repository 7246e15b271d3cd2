"""Stage `pk_locality_hessian`: [PK22] PK-12's Hessians: each window's ViT (pk_locality) on the first
`pk_locality.hessian_batches` of the training mini-batches pk_analysis draws for the global ViT, with its
settings (`pk`): the top eigenvalues, both ends of the spectrum and the spectral density."""

import argparse
from dataclasses import replace

from vitheory.core.artifacts import write_json, write_table
from vitheory.core.checkpoint import load_checkpoint, seed_folder
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.device import DEVICE, resolve_device
from vitheory.core.paths import artifact
from vitheory.images.params import RealTrainParams
from vitheory.images.training import load_images
from vitheory.pk22.hessian import COLUMNS, DENSITY_COLUMNS, hessian_rows
from vitheory.pk22.locality import LocalityParams, model_name
from vitheory.pk22.params import PKParams

PARAMS = {"train.device": DEVICE, "pk": PKParams, "pk_locality": LocalityParams, "real": RealTrainParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    cfg, real = params.pk_locality, params.real
    device = resolve_device(params.train.device)
    data = load_images(artifact("images"), ("train",), device)
    settings = replace(params.pk, hessian_batches=cfg.hessian_batches)
    spectra, density = [], []
    for window in cfg.windows:
        for seed in range(real.seeds):
            model = load_checkpoint(artifact("pk_locality_models") / model_name(window) / seed_folder(seed),
                                    device.type)
            rows, nodes = hessian_rows(model_name(window), seed, model, data.x["train"], data.y["train"], settings,
                                       real)
            spectra += rows
            density += nodes
    write_table(artifact("pk_locality_hessian"), COLUMNS, spectra)
    write_table(artifact("pk_locality_density"), DENSITY_COLUMNS, density)
    write_json(artifact("pk_locality_hessian_metrics"), {"device": device.type,
                                                         "hessian_batches": cfg.hessian_batches})


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
