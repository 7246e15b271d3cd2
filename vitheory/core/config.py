"""The typed loader behind `params.yaml`: frozen dataclass sections whose fields carry range rules.

`build` turns a parsed YAML mapping into a section and rejects unknown or missing keys, wrong types
and out-of-range values with one `ParamsError` line that names the key, the value and what is
allowed. It imports neither torch nor numpy, so a stage fails on a bad value in well under a second,
before any compute and before it writes anything. The sections themselves live with the science
they configure (`vitheory.<paper>.params`).

A stage reads a `view`: only the keys its dvc.yaml entry lists, each validated with the type of the
section the stage declares for it, so that a stage imports its own paper's params module alone and a
value it does not list cannot change what it computes. `vitheory.params` checks the whole file
(unknown keys, rules across sections) in the pipeline's first stage.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

import yaml

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
    if kind is Any:
        return "any value"
    if get_origin(kind) is dict:
        return "a mapping of names, each to " + describe(get_args(kind)[1])
    if get_origin(kind) is tuple:
        item = get_args(kind)[0]
        if item is Any:
            return "a list of values"
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
    if kind is Any:  # checked by whoever reads it (the atlas's values: by the keys they set)
        return value
    if get_origin(kind) is dict:  # a non-empty YAML mapping, its names strings
        if not isinstance(value, dict) or not value or not all(isinstance(name, str) for name in value):
            raise fail(key, value, f"a non-empty {describe(kind)[2:]}")
        return {name: _convert(get_args(kind)[1], item, f"{key}.{name}") for name, item in value.items()}
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
        values[f.name] = _built(hints[f.name], f.metadata.get("rule"), raw[f.name], key)
    section = cls(**values)
    for key, value, allowed in section.relations():
        raise fail(f"{prefix}.{key}" if prefix else key, value, allowed)
    return section


def read_params_file(path: str | Path) -> Any:
    """The parsed YAML of a params file; ParamsError (one line) when it cannot be read or parsed."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise ParamsError(f"{path}: cannot be read ({err.strerror}); run from the repository root") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark else ""
        raise ParamsError(f"{path}: not valid YAML{line}") from None


def value_at(tree: Any, key: str) -> Any:
    """The value at the dotted `key` (`real.models.vit.depth`) of nested mappings; KeyError(key) when a
    level is missing or is not a mapping. The one reader of dotted keys: callers word their own error."""
    node = tree
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(key)
        node = node[part]
    return node


def set_value_at(tree: dict[str, Any], key: str, value: Any,
                 level: Callable[[], dict[str, Any]] = dict) -> dict[str, Any]:
    """Set the dotted `key` of nested mappings to `value` in place, a missing level made by `level` (a
    round-trip YAML writer passes its own mapping type); returns the mapping that holds the leaf."""
    *parents, last = key.split(".")
    node = tree
    for part in parents:
        if part not in node:
            node[part] = level()
        node = node[part]
    node[last] = value
    return node


class ParamsView:
    """The params a reader declared and listed, and nothing else: a stage sees only the keys its dvc.yaml
    entry lists, so that it cannot depend on a value DVC does not track. Reading another key raises a
    ParamsError that names it; a listed section is its validated, frozen dataclass."""

    def __init__(self, values: Mapping[str, Any], prefix: str, reader: str) -> None:
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "_prefix", prefix)
        object.__setattr__(self, "_reader", reader)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name not in self._values:
            raise ParamsError(f"{self._reader} reads params key {self._prefix}{name}, which it does not list: add it "
                              "to the stage's params in dvc.yaml (and its section to the stage's PARAMS)")
        return self._values[name]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"params are read-only ({self._prefix}{name})")

    def keys(self) -> list[str]:
        return list(self._values)


def as_dict(value: Any) -> Any:
    """A section, a view or a plain value as plain data (tuples stay tuples), for metadata and digests."""
    if isinstance(value, ParamsView):
        return {name: as_dict(getattr(value, name)) for name in value.keys()}
    if is_dataclass(value):
        return asdict(value)
    return value


def section_type(declared: Mapping[str, Any], key: str) -> tuple[Any, Rule | None]:
    """The type (a section class or a plain type) and range rule of the params key `key`, found under the
    declared key that holds it; KeyError when none does."""
    for root, kind in declared.items():
        if key == root:
            return kind, None
        if key.startswith(root + "."):
            rule = None
            for name in key[len(root) + 1:].split("."):
                if not is_dataclass(kind):
                    raise KeyError(key)
                found = {f.name: f for f in fields(kind)}.get(name)
                if found is None:
                    raise KeyError(key)
                kind, rule = get_type_hints(kind)[name], found.metadata.get("rule")
            return kind, rule
    raise KeyError(key)


def _built(kind: Any, rule: Rule | None, raw: Any, key: str) -> Any:
    """`raw` converted to `kind`, every element checked against `rule`."""
    value = _convert(kind, raw, key)
    for item in value if isinstance(value, tuple) else (value,):
        if rule is not None and not rule.test(item):
            raise fail(key, value, f"{rule.allowed} (every element)" if value is not item else rule.allowed)
    return value


def view(raw: Any, declared: Mapping[str, Any], listed: Sequence[str], reader: str) -> ParamsView:
    """The keys `listed` of the parsed params `raw`, each validated with the type `declared` for it or for
    the section that holds it. A listed key that no declared key holds is the reader's mistake: one
    ParamsError line."""
    tree: dict[str, Any] = {}
    for key in listed:
        try:
            kind, rule = section_type(declared, key)
        except KeyError:
            raise ParamsError(f"{reader} lists params key {key}, which it does not declare (declared: "
                              f"{', '.join(declared)})") from None
        try:
            given = value_at(raw, key)
        except KeyError:
            raise ParamsError(f"{key} is missing: add it to params.yaml") from None
        set_value_at(tree, key, _built(kind, rule, given, key))

    def wrap(node: dict[str, Any], prefix: str) -> ParamsView:
        return ParamsView({name: wrap(child, f"{prefix}{name}.") if isinstance(child, dict) else child
                           for name, child in node.items()}, prefix, reader)

    return wrap(tree, "")


def unknown_keys(raw: Any, declared: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    """Keys of `raw` that no declared section holds (a typo, or a leftover), as ParamsError messages; a
    declared section's own unknown keys are `build`'s to name."""
    if not isinstance(raw, dict):
        return
    known = sorted({root[len(prefix):].split(".")[0] for root in declared if root.startswith(prefix)})
    for key, child in raw.items():
        dotted = f"{prefix}{key}"
        if dotted in declared:
            continue
        if key not in known:
            yield f"{dotted} is not a known key (known in {prefix[:-1] or 'the top level'}: {', '.join(known)})"
        else:
            yield from unknown_keys(child, declared, f"{dotted}.")
