"""Stage `prepare_images`: the real dataset named in params (downloaded on first use when it has to
be), split into deterministic, class-balanced train / val / test sets of uint8 images."""

import argparse

from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.paths import artifact
from vitheory.images.params import ImagesParams
from vitheory.images.prepare import prepare

PARAMS = {"images": ImagesParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    prepare(params.images, artifact("images"))


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
