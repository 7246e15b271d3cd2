"""Stage `render`: the figures of the report, as PNG, from the logged series."""

import argparse
from pathlib import Path

from vitheory import plots
from vitheory.artifacts import read_json
from vitheory.cli import run_stage
from vitheory.params import Params


def main(params: Params, args: argparse.Namespace) -> None:
    cfg = params.render
    plots.set_theme(cfg.context)
    history = plots.read_history(args.history, "train_li_vit")
    reference = read_json(args.metrics, "train_li_vit")["reference"]
    figures = Path(args.figures)
    plots.save_figure(plots.attention_mass_figure(history, **reference),
                      figures / "li_vit_attention.png", cfg.dpi)
    plots.save_figure(plots.training_curves_figure(history), figures / "li_vit_training.png", cfg.dpi)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--history", required=True, help="long-form CSV written by train_li_vit")
    parser.add_argument("--metrics", required=True, help="summary metrics written by train_li_vit")
    parser.add_argument("--figures", required=True, help="folder for the PNG figures")
    run_stage(main, parser)
