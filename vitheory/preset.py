"""Apply a preset: a YAML file of overrides merged into params.yaml, validated before anything is
written (a bad preset leaves params.yaml as it was). params.yaml keeps its comments and layout: only
the overridden values change, and an overridden value takes the preset's comment where the preset
gives one (the default's would be wrong beside it).

`presets/default.yaml` holds, with params.yaml's own values and comments, every key that any other
preset overrides: applying it after any preset gives params.yaml back byte for byte. It is generated
from params.yaml (`--write-default`); a test fails when it is stale.

    python -m vitheory.preset paper                 # or a path: presets/paper.yaml, my_preset.yaml
    python -m vitheory.preset default               # back to the defaults
    python -m vitheory.preset --write-default       # after editing params.yaml or a preset
    python -m vitheory.preset --write-decisive      # after a run: presets/decisive.yaml from its power lines
    python -m vitheory.preset quick --as-experiment # the DVC experiment of a preset, params.yaml untouched
"""

from __future__ import annotations

import argparse
import io
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from vitheory.core.claims import AFFORDABLE_SEEDS, INCONCLUSIVE, POWER, labelled_checks
from vitheory.core.config import set_value_at
from vitheory.core.errors import ParamsError
from vitheory.core.paths import artifact
from vitheory.papers import PAPERS
from vitheory.overrides import PRESETS, leaves
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


def round_trip_yaml() -> YAML:
    """A ruamel round-trip loader and dumper that keeps comments and never folds a long line."""
    round_trip = YAML()
    round_trip.width = 4096  # never fold a long line
    return round_trip


def _comment(document: CommentedMap, key: str) -> Any:
    """The comment token after `key`'s value (with any comment lines below it), or None."""
    entry = document.ca.items.get(key)
    return entry[2] if entry and len(entry) > 2 else None


def _take_comment(document: CommentedMap, key: str, preset: CommentedMap) -> None:
    """`key`'s comment beside its value in `document` becomes the preset's, or none when the preset gives
    none (params.yaml's would describe the value replaced); the comment lines below it, which belong
    to what follows in params.yaml, stay."""
    given = _comment(preset, key) if isinstance(preset, CommentedMap) else None
    first = given.value.split("\n", 1)[0].strip() if given is not None else ""
    first = first if first.startswith("#") else ""  # a preset's comment lines below the key are not its
    kept = _comment(document, key)
    if kept is None:
        if first:
            document.yaml_add_eol_comment(first, key, column=given.column)
        return
    below = kept.value.split("\n", 1)[1] if "\n" in kept.value else ""
    if first:
        kept.value, kept.column = f"{first}\n{below}", given.column
    elif below:
        kept.value = f"\n{below}"
    else:
        document.ca.items[key][2] = None


def override(document: CommentedMap, overrides: dict[str, Any], every_comment: bool = False) -> None:
    """Set every leaf of `overrides` in a round-trip `document` in place; a changed leaf takes the
    preset's comment (or none), and so does every leaf when `every_comment` (the default preset: a
    preset applied before may have left its comment beside a value equal to the default's); a list
    replacing a one-line list stays on one line."""
    for key, value in overrides.items():
        old = document[key]
        if isinstance(value, dict) and isinstance(old, CommentedMap):
            override(old, value, every_comment)
            continue
        if value == old:  # its comment still fits; the default's may not be the one beside it (another preset's)
            if every_comment:
                _take_comment(document, key, overrides)
            continue
        if isinstance(value, list) and isinstance(old, CommentedSeq) and old.fa.flow_style():
            document[key] = CommentedSeq(value)
            document[key].fa.set_flow_style()
        else:
            document[key] = value
        _take_comment(document, key, overrides)


def apply(preset: Path, params_path: Path = DEFAULT_PATH) -> None:
    overrides = yaml.safe_load(preset.read_text()) or {}
    parse_params(merge(yaml.safe_load(params_path.read_text()), overrides))
    round_trip = round_trip_yaml()
    document = round_trip.load(params_path)
    is_default = preset.resolve() == (PRESETS / "default.yaml").resolve()
    override(document, round_trip.load(preset) or {}, every_comment=is_default)
    round_trip.dump(document, params_path)


def experiment_command(preset: Path, params_path: Path = DEFAULT_PATH) -> str:
    """`dvc exp run --queue` of the preset's overrides (validated first, as `apply` does), one `-S` per leaf:
    the preset runs as a DVC experiment in a temporary copy (`dvc queue start`), and params.yaml, dvc.lock
    and the committed reports stay as they are."""
    overrides = yaml.safe_load(preset.read_text()) or {}
    parse_params(merge(yaml.safe_load(params_path.read_text()), overrides))
    dotted = [key for key in leaves(overrides) if key.count(".") != len(_path(overrides, key)) - 1]
    if dotted:  # DVC's -S reads every dot as a level: such a key cannot be set by an experiment
        raise ParamsError(f"{preset.name} sets {dotted[0]}, whose YAML key holds a dot, which `dvc exp run -S` cannot "
                          f"address; apply it instead: python -m vitheory.preset {preset.stem}")
    settings = [f"{key}={json.dumps(value) if isinstance(value, (list, bool)) else value}"
                for key, value in leaves(overrides).items()]
    return shlex.join(["dvc", "exp", "run", "--queue", "--name", preset.stem,
                       *(arg for setting in settings for arg in ("-S", setting))])


def _path(tree: dict[str, Any], dotted: str) -> list[str]:
    """The YAML keys on the way to the leaf `leaves(tree)` names `dotted` (a key may itself hold dots)."""
    for key, value in tree.items():
        if dotted == key:
            return [key]
        if isinstance(value, dict) and dotted.startswith(f"{key}."):
            below = _path(value, dotted[len(key) + 1:])
            if below:
                return [key, *below]
    return []


def _keys(tree: dict[str, Any], into: dict[str, Any]) -> dict[str, Any]:
    """The union of the key trees of several presets: a key a preset sets as a whole (a leaf, or a map
    in one preset and a leaf in another) is kept whole."""
    for key, value in tree.items():
        if isinstance(value, dict) and isinstance(into.get(key, {}), dict):
            _keys(value, into.setdefault(key, {}))
        else:
            into[key] = None
    return into


def _pruned(document: CommentedMap, keys: dict[str, Any]) -> CommentedMap:
    """`document` cut down to `keys`, each kept value with its comment token."""
    pruned = CommentedMap()
    for key, below in keys.items():
        value = document[key]
        pruned[key] = _pruned(value, below) if below is not None and isinstance(value, CommentedMap) else value
        if key in document.ca.items:
            pruned.ca.items[key] = document.ca.items[key]
    return pruned


DEFAULT_HEADER = """\
# The `default` preset: generated by `python -m vitheory.preset --write-default` from params.yaml, do not
# edit. It holds params.yaml's values and comments for every key another preset overrides, so that
# `python -m vitheory.preset default` after any preset gives params.yaml back byte for byte.
"""


def default_preset(params_path: Path = DEFAULT_PATH) -> str:
    """The text of presets/default.yaml for `params_path` and the presets beside it."""
    keys: dict[str, Any] = {}
    for path in sorted(PRESETS.glob("*.yaml")):
        if path.stem != "default":
            _keys(yaml.safe_load(path.read_text()) or {}, keys)
    round_trip = round_trip_yaml()
    stream = io.StringIO()
    round_trip.dump(_pruned(round_trip.load(params_path), keys), stream)
    return DEFAULT_HEADER + stream.getvalue()


def which_preset(params: dict[str, Any]) -> str:
    """The preset whose values `params` (params.yaml, parsed) holds: every key any preset sets is that
    preset's value, or the default's where it sets none; else a custom setting, naming the nearest preset
    and the keys that differ from it."""
    given = leaves(params)
    defaults = leaves(yaml.safe_load((PRESETS / "default.yaml").read_text()) or {})
    differing = {}
    for path in sorted(PRESETS.glob("*.yaml")):
        wanted = defaults | leaves(yaml.safe_load(path.read_text()) or {})
        differing[path.stem] = sorted(key for key, value in wanted.items() if given.get(key) != value)
        if not differing[path.stem]:
            return path.stem
    nearest = min(differing, key=lambda name: len(differing[name]))
    return f"custom: {nearest} but for {', '.join(differing[nearest])}"


DECISIVE_HEADER = """\
# The `decisive` preset: generated by `python -m vitheory.preset --write-decisive` from a run's
# reports/claims.json, do not edit. Every family of seeds rises to the most that any inconclusive
# criterion of its claims needs at that run's effect and spread (power {power}: REPORT.md's "Seeds to
# decide" lines), never below params.yaml's; a criterion that would need more than {affordable:,} is left
# out (its effect is too small to decide), as are claims whose units are not seeds (JSL-7). For a longer
# run or a GPU: `python -m vitheory.preset decisive`, then `dvc repro`; the needs are estimates from one
# run, so its own report may ask for more.
"""


def decisive_seeds(records: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, tuple[int, list[str]]]:
    """params key -> (seeds, the criteria asking for them) for every seeds key that an inconclusive
    criterion of `records` (reports/claims.json's claims) needs raised above its value in `params`."""
    keys = {claim.id: claim.seeds for paper in PAPERS for claim in paper.claims}
    current = leaves(params)
    raised: dict[str, tuple[int, list[str]]] = {}
    for record in records:
        for label, check in labelled_checks(record):
            needed = check.get("seeds_needed")
            if check["verdict"] != INCONCLUSIVE or needed is None or needed > AFFORDABLE_SEEDS:
                continue
            for key in keys.get(record["id"], ()):
                count, asking = raised.get(key, (current[key], []))
                if needed > current[key]:
                    raised[key] = (max(count, needed), [*asking, f"{record['id']} {label}: {needed}"])
    return raised


def decisive_preset(claims_path: Path, params_path: Path = DEFAULT_PATH) -> str:
    """The text of presets/decisive.yaml from the run whose claims are `claims_path`."""
    raised = decisive_seeds(json.loads(claims_path.read_text())["claims"], yaml.safe_load(params_path.read_text()))
    tree = CommentedMap()
    for key, (count, asking) in sorted(raised.items()):
        holder = set_value_at(tree, key, count, CommentedMap)
        holder.yaml_add_eol_comment("asked by " + "; ".join(asking), key.rsplit(".", 1)[-1])
    stream = io.StringIO()
    if tree:
        round_trip_yaml().dump(tree, stream)
    return DECISIVE_HEADER.format(affordable=AFFORDABLE_SEEDS, power=POWER) + (stream.getvalue() or "{}  # no family needs more seeds\n")


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
    parser = argparse.ArgumentParser(prog="python -m vitheory.preset", description=__doc__.split("\n\n")[0])
    parser.add_argument("preset", nargs="?", help="a preset's name in presets/ (decisive, default, fashion_mnist, "
                                                  "paper, quick) "
                                                  "or a YAML file's path")
    parser.add_argument("params", nargs="?", type=Path, default=DEFAULT_PATH, help="the params file to rewrite")
    parser.add_argument("--write-default", action="store_true",
                        help="regenerate presets/default.yaml from params.yaml and the other presets")
    parser.add_argument("--as-experiment", action="store_true",
                        help="print the `dvc exp run --queue` of the preset instead of rewriting params.yaml")
    parser.add_argument("--write-decisive", action="store_true",
                        help="write presets/decisive.yaml from reports/claims.json's power lines (and regenerate "
                             "presets/default.yaml)")
    args = parser.parse_args(argv)
    if args.write_decisive:
        claims = PRESETS.parent / artifact("claims")
        if not claims.is_file():
            print(f"error: {claims} not found: run `dvc repro` (its report stage writes it) first", file=sys.stderr)
            return 2
        (PRESETS / "decisive.yaml").write_text(decisive_preset(claims, args.params))
        print(f"{PRESETS / 'decisive.yaml'} written from {claims}")
    if args.write_default or args.write_decisive:
        (PRESETS / "default.yaml").write_text(default_preset(args.params))
        print(f"{PRESETS / 'default.yaml'} written from {args.params}")
        return 0
    if args.preset is None:
        parser.error("name a preset, or --write-default")
    try:
        preset = find(args.preset)
        if args.as_experiment:
            print(experiment_command(preset, args.params))
            return 0
        apply(preset, args.params)
    except ParamsError as err:
        print(f"error: {args.preset}: {err}", file=sys.stderr)
        return 2
    except (OSError, yaml.YAMLError) as err:
        print(f"error: cannot read {getattr(err, 'filename', None) or 'a YAML file'}: {err.__class__.__name__}; "
              "usage: python -m vitheory.preset PRESET [params.yaml]", file=sys.stderr)
        return 2
    if preset.resolve() == (PRESETS / "default.yaml").resolve():
        print(f"{args.params} is back at its defaults (presets/default.yaml applied)")
    else:
        print(f"{preset} applied to {args.params}; `python -m vitheory.preset default` undoes it")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
