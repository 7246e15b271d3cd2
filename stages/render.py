"""Stage `render`: the figures of the report, as PNG, each paper's from its stages' artifacts."""

import argparse

from vitheory.core.cli import run_stage
from vitheory.core.figures import set_theme
from vitheory.jsl22 import figures as jsl22_figures
from vitheory.li23 import figures as li23_figures
from vitheory.params import Params
from vitheory.pk22 import figures as pk22_figures


def main(params: Params, args: argparse.Namespace) -> None:
    cfg = params.render
    set_theme(cfg.context)
    li23_figures.render(cfg.dpi)
    jsl22_figures.render(cfg.dpi, cfg.association_threshold, params.transfer.target_error)
    pk22_figures.render(cfg.dpi)


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__))
