"""Stage `handbuilt`: [JSL22] Theorem 3.2's transformer written down, no training: its errors on the spatial
test set, with P P^T associating and turned away from the sets, a negative control attending to a wrong
partition, and the chance that a Top_C over the other patches meets a patch's set (JSL-7)."""

import argparse

from vitheory.core.artifacts import write_json
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.paths import artifact
from vitheory.jsl22.handbuilt import chance_meets_set, constructions, measure
from vitheory.jsl22.params import HandbuiltParams
from vitheory.jsl22.training import read_spatial

PARAMS = {"handbuilt": HandbuiltParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    cfg = params.handbuilt
    _, test, structure = read_spatial(artifact("spatial_data"))
    sets = structure["sets"]
    models = constructions(sets, structure["w_star"], cfg.gap, cfg.pos_dim, cfg.seed)
    write_json(artifact("handbuilt_metrics"),
               {"models": {name: measure(model, *test, sets) for name, model in models.items()},
                "chance_meets_set": chance_meets_set(sets.numel(), sets.shape[1])})


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
