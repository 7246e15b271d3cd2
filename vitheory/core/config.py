"""The typed loader behind `params.yaml`: frozen dataclass sections whose fields carry range rules.

`build` turns a parsed YAML mapping into a section and rejects unknown or missing keys, wrong types
and out-of-range values with one `ParamsError` line that names the key, the value and what is
allowed. It imports neither torch nor numpy, so a stage fails on a bad value in well under a second,
before any compute and before it writes anything. The sections themselves live with the science
they configure (`vitheory.<paper>.params`); `vitheory.params` assembles the whole file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Literal, get_args, get_origin, get_type_hints

from vitheory.core.errors import ParamsError


@dataclass(frozen=True)
class Rule:
    """A range rule for one field: `test(value)` must hold; `allowed` says what does."""

    test: Callable[[Any], bool]
    allowed: str


POSITIVE = Rule(lambda v: v > 0, "> 0")
NON_NEGATIVE = Rule(lambda v: v >= 0, ">= 0")
FRACTION = Rule(lambda v: 0 <= v <= 1, "a fraction in [0, 1]")
OPEN_FRACTION = Rule(lambda v: 0 < v <= 1, "a fraction in (0, 1]")


def at_least(low: int) -> Rule:
    return Rule(lambda v: v >= low, f">= {low}")


def knob(rule: Rule | None = None) -> Any:
    """A required field with an optional range rule."""
    return field(metadata={"rule": rule})


Violation = tuple[str, Any, str]  # (key relative to the section, value, what is allowed)


class Section:
    """Base of every params section: `relations` yields violations that involve several keys."""

    def relations(self) -> Iterator[Violation]:
        return iter(())


def describe(kind: Any) -> str:
    if get_origin(kind) is tuple:
        item = get_args(kind)[0]
        if get_origin(item) is Literal:
            return "a list of values, each " + describe(item)
        return "a list of " + {int: "integers", float: "numbers"}[item]
    if get_origin(kind) is Literal:
        return "one of " + ", ".join(str(choice) for choice in get_args(kind))
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(
        kind, getattr(kind, "__name__", str(kind)))


def fail(key: str, value: Any, allowed: str) -> ParamsError:
    shown = list(value) if isinstance(value, tuple) else value  # as written in the YAML
    return ParamsError(f"{key} = {shown!r} is not allowed: must be {allowed}")


def _convert(kind: Any, value: Any, key: str) -> Any:
    if is_dataclass(kind):
        return build(kind, value, key)
    if get_origin(kind) is Literal:
        if value not in get_args(kind):
            raise fail(key, value, describe(kind))
        return value
    if get_origin(kind) is tuple:  # a grid: a non-empty YAML list of one element type
        if not isinstance(value, list) or not value:
            raise fail(key, value, f"a non-empty {describe(kind)[2:]}")
        return tuple(_convert(get_args(kind)[0], item, key) for item in value)
    ok = {
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, (int, float)) and not isinstance(value, bool),
        str: isinstance(value, str),
        bool: isinstance(value, bool),
    }[kind]
    if not ok:
        raise fail(key, value, describe(kind))
    return float(value) if kind is float else value


def build(cls: type, raw: Any, prefix: str) -> Any:
    """The section `cls` from the mapping `raw` found at key `prefix` ("" for the whole file)."""
    where = prefix or "the top level"
    if not isinstance(raw, dict):
        raise fail(prefix or "params", raw, f"a mapping with keys {[f.name for f in fields(cls)]}")
    names = [f.name for f in fields(cls)]
    for key in raw:
        if key not in names:
            raise ParamsError(f"{prefix + '.' if prefix else ''}{key} is not a known key "
                              f"(known in {where}: {', '.join(names)})")
    hints = get_type_hints(cls)
    values = {}
    for f in fields(cls):
        key = f"{prefix}.{f.name}" if prefix else f.name
        if f.name not in raw:
            raise ParamsError(f"{key} is missing: add it to params.yaml ({describe(hints[f.name])})")
        value = _convert(hints[f.name], raw[f.name], key)
        rule = f.metadata.get("rule")
        for item in value if isinstance(value, tuple) else (value,):
            if rule is not None and not rule.test(item):
                raise fail(key, value, f"{rule.allowed} (every element)" if value is not item else rule.allowed)
        values[f.name] = value
    section = cls(**values)
    for key, value, allowed in section.relations():
        raise fail(f"{prefix}.{key}" if prefix else key, value, allowed)
    return section
