"""What every stage script shares: parse its paths, validate params first, and turn expected
failures into one line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from vitheory.errors import VitheoryError
from vitheory.params import DEFAULT_PATH, Params, load_params


def run_stage(main: Callable[[Params, argparse.Namespace], None], parser: argparse.ArgumentParser) -> None:
    """Parse the stage's paths (they live in dvc.yaml only), validate the whole params file, then
    run `main(params, args)`.

    A bad param, a missing or corrupt artifact, or a diverging run exits with code 2 and one
    `error:` line on stderr instead of a traceback, before `main` writes any output.
    """
    args = parser.parse_args()
    try:
        main(load_params(DEFAULT_PATH), args)
    except VitheoryError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
