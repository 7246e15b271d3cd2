"""Stage `generate_spatial`: the [JSL22] spatially structured data and its negative control, each a
folder of train/test splits, the structure (sets and feature, or the teacher's filters) and metadata."""

import argparse
from dataclasses import asdict

from vitheory import spatial
from vitheory.artifacts import atomic_path
from vitheory.cli import run_stage
from vitheory.params import Params


def main(params: Params, args: argparse.Namespace) -> None:
    cfg, control = params.generate.spatial, params.generate.spatial_control
    structure, train, test = spatial.generate(cfg)
    agreement = (spatial.labelling_function(test.X, structure["sets"], structure["w_star"]) * test.y > 0)
    meta = {"params": asdict(cfg), "f_star_test_agreement": agreement.float().mean().item(),
            "structure": "sets (L, C): patch indices of each set, row-major on the grid; w_star (d,)"}
    with atomic_path(args.data) as tmp:
        spatial.save(tmp, structure, train.tensors(), test.tensors(), meta)
    structure, train, test = spatial.generate_control(control)
    meta = {"params": asdict(control),
            "structure": "sets (L, C); filters (r, C, d): the teacher CNN's filter per position in a set"}
    with atomic_path(args.control) as tmp:
        spatial.save(tmp, structure, train, test, meta)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True, help="folder for the Assumption 1 data")
    parser.add_argument("--control", required=True, help="folder for the negative-control data")
    run_stage(main, parser)
