"""`params.yaml` as a whole: every section the paper table's packages own (vitheory.papers), checked
with the loader of `vitheory.core.config`.

`load_params` rejects unknown or missing keys, wrong types, out-of-range values and broken rules
across sections with one `ParamsError` line that names the key, the value and what is allowed. The
pipeline's first stage, `check_params`, runs it before any other stage computes; a stage itself
validates only the keys it lists (vitheory.core.cli). `grid_points` checks each point of the atlas's
grid (vitheory.grid) as a params file of its own: `python -m vitheory.params` and `python -m
vitheory.atlas` do, the pipeline does not.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from vitheory.core.config import ParamsView, fail, read_params_file, unknown_keys, value_at, view
from vitheory.core.errors import ParamsError
from vitheory.grid import SECTION, Point, knob_value, line_key, points, same_data, with_settings
from vitheory.papers import PACKAGES, PAPERS

DEFAULT_PATH = Path("params.yaml")
SECTIONS = {key: kind for package in PACKAGES for key, kind in package.params.items()}
# ours: a claim's interval needs a spread over its seeds; one seed would be taken for a fixed setting
# (vitheory.core.intervals, `Measurement.left_out`), and its verdict would rest on that one seed
MIN_SEEDS = 2


def parse_params(raw: Any) -> ParamsView:
    """Validate an already-parsed params mapping: every section, no unknown key, every package's rules
    across its sections. The atlas's grid is checked for its form only: `grid_points` checks its points."""
    if not isinstance(raw, dict):
        raise fail("params", raw, f"a mapping with the sections {', '.join(SECTIONS)}")
    for problem in unknown_keys(raw, SECTIONS):
        raise ParamsError(problem)
    params = view(raw, SECTIONS, list(SECTIONS), "params.yaml")
    for package in PACKAGES:
        for key, value, allowed in package.relations(params):
            raise fail(key, value, allowed)
    for claim in (claim for paper in PAPERS for claim in paper.claims):
        for key in claim.seeds:
            value = value_at(raw, key)
            if value < MIN_SEEDS:
                raise fail(key, value, f">= {MIN_SEEDS}: {claim.id}'s intervals need a spread over seeds")
    return params


def grid_points(raw: Any) -> list[Point]:
    """The atlas's points around the parsed params `raw`, each checked as a whole params file of its own
    (`parse_params` of the file with its knob set). Not part of `parse_params`: an experiment's own
    overrides (`dvc exp run -S`) must not fail the pipeline's check on a point of a grid it does not run."""
    default = parse_params(raw)
    found = points(default.atlas, raw)
    # each line's values so far with the data they give, on a knob's line at the default the default's first:
    # every point is an experiment of its own, and two values of the same data would be one run twice
    given: dict[str, list[tuple[str, Any]]] = {}
    for point in found:
        try:
            params = parse_params(with_settings(raw, point.settings))
        except ParamsError as err:
            raise ParamsError(f"{SECTION}.knobs.{point.knob}: its point {point.value!r} is not a valid params "
                              f"file: {err}") from None
        key, base = line_key(point.knob)
        data, said = same_data(params, key)
        seen = given.setdefault(point.knob, [] if base else [(f"{knob_value(raw, key)!r} (the default)",
                                                              same_data(default, key)[0])])
        for shown, other in seen:
            if other == data:
                raise fail(f"{SECTION}.knobs.{point.knob}", default.atlas.knobs[point.knob],
                           f"values of distinct data: {shown} and {point.value!r} both give {said}; drop one")
        seen.append((repr(point.value), data))
    return found


def load_params(path: str | Path = DEFAULT_PATH) -> ParamsView:
    """Read and validate a params file; raise ParamsError (one line) on anything not allowed."""
    raw = read_params_file(path)
    try:
        return parse_params(raw)
    except ParamsError as err:
        raise ParamsError(f"{path}: {err}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vitheory.params", description="Check a params file: every key known, every value in range, "
                                                 "every rule across sections, every point of the atlas's grid. "
                                                 "Prints the error or 'ok'.")
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT_PATH, help="default: %(default)s")
    args = parser.parse_args(argv)
    try:
        load_params(args.path)
        grid_points(read_params_file(args.path))
    except ParamsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{args.path}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
