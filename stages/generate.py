"""Stage `generate`: the [LI23] token data, train and test splits, with a metadata sidecar."""

import argparse
from dataclasses import asdict

from vitheory import li_tokens
from vitheory.artifacts import atomic_path
from vitheory.cli import run_stage
from vitheory.params import Params


def main(params: Params, args: argparse.Namespace) -> None:
    cfg = params.generate.li_tokens
    train, test = li_tokens.generate(cfg)
    meta = {"params": asdict(cfg), "n_relevant": cfg.n_relevant, "n_confusion": cfg.n_confusion,
            "kinds": {str(code): name for code, name in li_tokens.KIND_NAMES.items()},
            "patterns": "rows 0 and 1 are mu+ and mu-, the rest label-irrelevant"}
    with atomic_path(args.out) as tmp:
        li_tokens.save(tmp, train, test, meta)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", help="folder for train.safetensors, test.safetensors, meta.json")
    run_stage(main, parser)
