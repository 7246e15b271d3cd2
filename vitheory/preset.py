"""Apply a preset: a YAML file of overrides merged into params.yaml, validated before anything is
written (a bad preset leaves params.yaml as it was). params.yaml keeps its comments and layout: only
the overridden values change.

    python -m vitheory.preset presets/paper.yaml [params.yaml]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from vitheory.core.errors import ParamsError
from vitheory.params import DEFAULT_PATH, parse_params


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


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        apply(Path(argv[0]), Path(argv[1]) if len(argv) > 1 else DEFAULT_PATH)
    except ParamsError as err:
        print(f"error: {argv[0]}: {err}", file=sys.stderr)
        return 2
    except (OSError, yaml.YAMLError) as err:
        print(f"error: cannot read {getattr(err, 'filename', None) or 'a YAML file'}: {err.__class__.__name__}; "
              f"usage: python -m vitheory.preset PRESET.yaml [params.yaml]", file=sys.stderr)
        return 2
    print(f"{argv[0]} applied to {argv[1] if len(argv) > 1 else DEFAULT_PATH}; `git checkout params.yaml` undoes it")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
