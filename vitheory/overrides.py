"""Presets as settings: where the presets live and a preset's overrides as dotted params keys. Read by
vitheory.preset (which applies them to params.yaml) and by the atlas's grid (a point that brings a preset)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

PRESETS = Path(__file__).resolve().parents[1] / "presets"


def leaves(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Every leaf of a nested mapping under its dotted key (`control.seeds`)."""
    found = {}
    for key, value in tree.items():
        found |= leaves(value, f"{prefix}{key}.") if isinstance(value, Mapping) else {f"{prefix}{key}": value}
    return found


def preset_leaves(name: str) -> dict[str, Any] | None:
    """The settings of presets/<name>.yaml under their dotted keys; None when there is no such preset."""
    path = PRESETS / f"{name}.yaml"
    return leaves(yaml.safe_load(path.read_text()) or {}) if path.is_file() else None
