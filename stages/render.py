"""Stage `render`: the figures of the report, as PNG, each paper's from its stages' artifacts."""

import argparse

from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.figures import set_theme
from vitheory.papers import PACKAGES
from vitheory.params import SECTIONS

PARAMS = SECTIONS  # any paper's figures may read its section; dvc.yaml lists the keys they do read


def main(params: ParamsView, args: argparse.Namespace) -> None:
    set_theme(params.render.context)
    for package in PACKAGES:
        if package.render is not None:
            package.render(params)


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
