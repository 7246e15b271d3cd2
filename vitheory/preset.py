"""Apply a preset: a YAML file of overrides merged into params.yaml, validated before anything is
written (a bad preset leaves params.yaml as it was). params.yaml keeps its comments and layout: only
the overridden values change.

    python -m vitheory.preset paper                 # or a path: presets/paper.yaml, my_preset.yaml
    python -m vitheory.preset cluttered params.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from vitheory.core.errors import ParamsError
from vitheory.params import DEFAULT_PATH, parse_params

PRESETS = Path(__file__).resolve().parents[1] / "presets"


def merge(base: dict[str, Any], overrides: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """`base` with every leaf of `overrides` replaced; an override of an unknown key is an error."""
    merged = dict(base)
    for key, value in overrides.items():
        where = f"{prefix}{key}"
        if key not in base:
            raise ParamsError(f"preset key {where} is not in params.yaml")
        merged[key] = merge(base[key], value, f"{where}.") if isinstance(value, dict) and isinstance(
            base[key], dict) else value
    return merged


def override(document: CommentedMap, overrides: dict[str, Any]) -> None:
    """Set every leaf of `overrides` in a round-trip `document` in place, so that each key keeps its
    comment; a list replacing a one-line list stays on one line."""
    for key, value in overrides.items():
        old = document[key]
        if isinstance(value, dict) and isinstance(old, CommentedMap):
            override(old, value)
        elif isinstance(value, list) and isinstance(old, CommentedSeq) and old.fa.flow_style():
            document[key] = CommentedSeq(value)
            document[key].fa.set_flow_style()
        else:
            document[key] = value


def apply(preset: Path, params_path: Path = DEFAULT_PATH) -> None:
    overrides = yaml.safe_load(preset.read_text()) or {}
    parse_params(merge(yaml.safe_load(params_path.read_text()), overrides))
    round_trip = YAML()
    round_trip.width = 4096  # never fold a long line
    document = round_trip.load(params_path)
    override(document, overrides)
    round_trip.dump(document, params_path)


def find(preset: str) -> Path:
    """A preset by path, or by name among presets/ (`paper` is presets/paper.yaml); a name that is
    neither says which presets there are."""
    path = Path(preset)
    if path.is_file():
        return path
    named = PRESETS / f"{preset}.yaml"
    if named.is_file():
        return named
    known = ", ".join(sorted(p.stem for p in PRESETS.glob("*.yaml")))
    raise ParamsError(f"no preset {preset!r}: neither a file nor one of the presets in presets/ ({known})")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("preset", help="a preset's name in presets/ (paper, cluttered, ...) or a YAML file's path")
    parser.add_argument("params", nargs="?", type=Path, default=DEFAULT_PATH, help="the params file to rewrite")
    args = parser.parse_args(argv)
    try:
        preset = find(args.preset)
        apply(preset, args.params)
    except ParamsError as err:
        print(f"error: {args.preset}: {err}", file=sys.stderr)
        return 2
    except (OSError, yaml.YAMLError) as err:
        print(f"error: cannot read {getattr(err, 'filename', None) or 'a YAML file'}: {err.__class__.__name__}; "
              "usage: python -m vitheory.preset PRESET [params.yaml]", file=sys.stderr)
        return 2
    print(f"{preset} applied to {args.params}; `git checkout {args.params}` undoes it")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
