"""Stage `pk_analysis`: [PK22]'s analyses of the trained image models: Fourier and spatial variance of
every block's feature maps (PK-3, PK-4; ViT, CNN, AlterNet), accuracy under band-passed noise (PK-5;
ViT, CNN) and Hessian spectra on training mini-batches (PK-2; ViT, CNN, ViT with global average
pooling, ViT on the smallest data fraction)."""

import argparse

from vitheory.core.artifacts import write_json, write_table
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.device import DEVICE, resolve_device
from vitheory.core.paths import artifact
from vitheory.images.params import ImagesParams, RealTrainParams
from vitheory.images.training import load_images
from vitheory.pk22.params import PKParams, PKTrainParams
from vitheory.pk22.tables import TABLES, analyse, table_path

PARAMS = {"train.device": DEVICE, "pk": PKParams, "real": RealTrainParams, "images": ImagesParams, "pk_train": PKTrainParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    device = resolve_device(params.train.device)
    data = load_images(artifact("images"), ("train", "test"), device)
    tables = analyse(params.pk, params.real, min(params.pk_train.fractions), params.images.seed, data, device)
    for name, columns in TABLES.items():
        write_table(table_path(name), columns, tables[name])
    write_json(artifact("pk_metrics"), {"device": device.type})


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
