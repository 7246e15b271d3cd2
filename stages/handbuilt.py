"""Stage `handbuilt`: [JSL22] Theorem 3.2's transformer written down, no training: its errors on the spatial
test set, with P P^T associating and not, and a negative control attending to a wrong partition (JSL-7)."""

import argparse

from vitheory.core.artifacts import write_json
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.paths import artifact
from vitheory.jsl22.handbuilt import constructions, measure
from vitheory.jsl22.params import HandbuiltParams
from vitheory.jsl22.training import read_spatial

PARAMS = {"handbuilt": HandbuiltParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    cfg = params.handbuilt
    _, test, structure = read_spatial(artifact("spatial_data"))
    models = constructions(structure["sets"], structure["w_star"], cfg.gap, cfg.pos_dim, cfg.seed)
    write_json(artifact("handbuilt_metrics"),
               {"models": {name: measure(model, *test, structure["sets"]) for name, model in models.items()}})


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
