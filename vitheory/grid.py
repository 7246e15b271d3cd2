"""The atlas's grid: params.yaml's `atlas` section, its points, and where a claim holds along
a knob.

Each knob is a dotted params key with a few values, chosen where a paper says the regime matters. The
grid is walked one knob at a time from the committed params (the default point): one experiment per
value that differs from the default, so that its cost grows with the number of values, not with their
product. A grid key `key @ base` is the knob's line around another point (the base's settings, then
each value, every value a point); a knob under `presets` sets, at each value, the preset that value names
first (a source of images and its sizes); a value `{value: v, with: {key: value, ...}}` sets the keys that
must move with the knob (AlterNet's blocks and the CNN it is compared with). `vitheory.params.grid_points`
checks every point as a whole params file (the pipeline does not: an experiment's overrides never fail on a
grid it does not run); `python -m vitheory.atlas` queues
the points as DVC experiments and reads their claims back (`reports/atlas/atlas.csv`), and the report
stage reads that table, when it has rows, for each claim's "where it holds" line.

Where a claim holds along a knob (`where_it_holds`) is read from its verdicts at the knob's values in
order: the smallest value from which on it holds at every larger decided one, "everywhere" or "nowhere
in the grid". An inconclusive point decides nothing: it is named with its power line, never read as a
flip. A claim has a line along a knob only where the knob reaches it, a dependency of a stage its numbers
pass through (vitheory.reach, from dvc.yaml); the knobs that do not are named in one line. A knob none of
whose points has run reads "not run", with what running it costs.
"""

from __future__ import annotations

import copy
import csv
import functools
import json
import math
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from scipy import optimize, special

from vitheory.core.claims import FAILS, HOLDS, INCONCLUSIVE, PREMISE_LABEL, Claim
from vitheory.core.config import Section, as_dict, knob, set_value_at, value_at
from vitheory.core.errors import ArtifactError, ParamsError
from vitheory.overrides import preset_leaves
from vitheory.reach import reached_claims

SECTION = "atlas"  # read by `python -m vitheory.atlas`, by no stage of `dvc repro`


@dataclass(frozen=True)
class AtlasParams(Section):
    """params.yaml `atlas`: each knob (a dotted params key, or `key @ base`) to the values the atlas runs it
    at; `presets`: the knobs a value of which brings the preset it names."""

    knobs: dict[str, tuple[Any, ...]] = knob()
    presets: tuple[str, ...] = knob()


BASE = " @ "  # `spatial.vit.pos_dim @ generate.spatial.n_patches=100`: the knob's line around another point
PRESET = "preset"  # a base's `preset=<name>`: every setting of presets/<name>.yaml
WITH = "with"  # a value `{value: [2, 5], with: {real.models.cnn.blocks: [2, 5]}}`: keys that move with the knob


def preset_settings(knob: str, name: Any) -> tuple[tuple[str, Any], ...]:
    """The settings of the preset `name` (presets/<name>.yaml) but the knob's own; ParamsError when there is
    no such preset."""
    settings = preset_leaves(name) if isinstance(name, str) else None
    if settings is None:
        raise ParamsError(f"{SECTION}.knobs.{knob}: {name!r} names no preset (presets/<name>.yaml): add the "
                          "preset or drop it")
    return tuple((key, value) for key, value in settings.items() if key != knob)


def line_key(line: str) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """A grid key's knob and base: `key` is (key, ()); `key @ k=v, k2=v2` is (key, ((k, v), (k2, v2))), each
    value read as YAML, `preset=<name>` standing for the preset's settings. ParamsError when a base setting
    is not `k=v`."""
    key, _, base = line.partition(BASE)
    key = key.strip()
    settings: list[tuple[str, Any]] = []
    for setting in filter(None, (part.strip() for part in base.split(","))):
        name, sep, text = setting.partition("=")
        if not sep:
            raise ParamsError(f"{SECTION}.knobs.{line}: its base {setting!r} is not key=value")
        value = yaml.safe_load(text)
        settings += preset_settings(key, value) if name.strip() == PRESET else [(name.strip(), value)]
    return key, tuple(settings)


def grid_value(line: str, entry: Any) -> tuple[Any, tuple[tuple[str, Any], ...]]:
    """A grid value and the settings that move with it: `v` is (v, ()); `{value: v, with: {k: w}}` is
    (v, ((k, w),)). ParamsError when a mapping is not of that shape or moves the knob or the atlas."""
    if not isinstance(entry, Mapping):
        return entry, ()
    together = entry.get(WITH)
    if set(entry) != {"value", WITH} or not isinstance(together, Mapping) or not together:
        raise ParamsError(f"{SECTION}.knobs.{line}: {entry!r} is not a value nor {{value: v, {WITH}: {{key: value, "
                          "...}}}: the keys that move with the knob")
    key = line_key(line)[0]
    for name in together:
        if name == key or name == SECTION or str(name).startswith(f"{SECTION}."):
            raise ParamsError(f"{SECTION}.knobs.{line}: {WITH} sets {name}: it moves other keys, not the knob or "
                              "the atlas")
    return entry["value"], tuple(together.items())


def line_keys(line: str, values: Iterable[Any] = ()) -> list[str]:
    """The params keys a grid key's points set: its knob, its base's keys and those its `values` move with it."""
    key, base = line_key(line)
    moved = dict.fromkeys(name for entry in values for name, _ in grid_value(line, entry)[1])
    return [key, *(name for name, _ in base), *moved]


def reached_lines(claims: Iterable[Claim], grid: Mapping[str, Sequence[Any]]) -> dict[str, set[str]]:
    """Each claim's id -> the grid's keys (to their values) that reach one of its stages (one of the keys its
    points set does)."""
    return reached_claims(claims, {line: line_keys(line, values) for line, values in grid.items()})


@dataclass(frozen=True)
class Point:
    """One experiment of the atlas: the default params with one knob set to one value, on a line around
    another point (`knob` holds its base) after the base's settings, and after `brought`, the settings the
    value brings: the preset it names (AtlasParams.presets) or the keys that move with it (`with`)."""

    knob: str  # the grid's key: the table's column `knob`
    value: Any
    brought: tuple[tuple[str, str], ...] = ()  # (params key, its value as JSON): a point is hashable

    def __hash__(self) -> int:  # by the value's JSON: a value may be a list (AlterNet's blocks)
        return hash((self.knob, value_text(self.value), self.brought))

    @functools.cached_property  # the line's base is parsed once per point (a preset base reads its file)
    def settings(self) -> tuple[tuple[str, Any], ...]:
        """Every (params key, value) the point sets, in the order they are set."""
        key, base = line_key(self.knob)
        return (*((name, json.loads(text)) for name, text in self.brought), *base, (key, self.value))

    @property
    def name(self) -> str:
        """The experiment's name, a valid git ref name: `atlas-<grid key>-<value>`."""
        shown = self.value if isinstance(self.value, str) else value_text(self.value)  # a name without quotes
        return "atlas-" + "-".join(re.sub(r"[^A-Za-z0-9_.-]+", "_", part).strip("_.") for part in (self.knob, shown))

    @property
    def overrides(self) -> list[str]:
        """`dvc exp run -S`'s arguments, one per setting: each value as YAML (JSON is YAML)."""
        return [f"{key}={value_text(value)}" for key, value in self.settings]


def value_text(value: Any) -> str:
    return json.dumps(value)


def knob_value(raw: Mapping[str, Any], key: str) -> Any:
    """The value of the knob `key` in the parsed params `raw`; ParamsError when the file has no such key."""
    try:
        return value_at(raw, key)
    except KeyError:
        raise ParamsError(f"{SECTION}.knobs.{key} is not a params key: name a key of params.yaml") from None


def with_value(raw: Mapping[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A copy of the parsed params with the knob `key` set to `value`."""
    return with_settings(raw, ((key, value),))


def with_settings(raw: Mapping[str, Any], settings: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """A copy of the parsed params with each (key, value) of `settings` set, in order."""
    changed = copy.deepcopy(dict(raw))
    for key, value in settings:
        knob_value(raw, key)
        set_value_at(changed, key, value)
    return changed


def same_data(params: Any, key: str) -> tuple[Any, str]:
    """What the knob `key` makes of the validated params `params`, as (a value equal between two points of
    the same data, those data in words): the `data_key()` of the deepest section on the key's path that
    has one (the fractions a section turns into counts: alpha* 0.1 and 0.125 both draw 2 relevant tokens
    of 20), else the knob's value as the loader typed it."""
    node, found = params, None
    for part in key.split("."):
        node = node[part] if isinstance(node, Mapping) else getattr(node, part)
        if isinstance(node, Section) and hasattr(node, "data_key"):
            found = node.data_key()
    return found or (node, value_text(as_dict(node)))


def points(grid: AtlasParams, raw: Mapping[str, Any]) -> list[Point]:
    """Every experiment of the grid around the params `raw`: each knob's values other than its default; on a
    line around another point (`key @ base`), every value."""
    found = []
    for line, values in grid.knobs.items():
        key, base = line_key(line)
        if any(name == SECTION or name.startswith(f"{SECTION}.") for name in line_keys(line)):
            raise ParamsError(f"{SECTION}.knobs.{line}: the atlas cannot vary its own grid")
        default = knob_value(raw, key)
        if key in (name for name, _ in base):
            raise ParamsError(f"{SECTION}.knobs.{line}: its base sets the knob itself: a base moves other keys")
        for name, _ in base:  # a base at the default (a preset's D) is a line like any other: each value a point
            knob_value(raw, name)
        if base and line in grid.presets:
            raise ParamsError(f"{SECTION}.presets: {line} is a line around another point; a preset's value "
                              "brings its settings only on a knob's line at the default")
        for entry in values:
            value, together = grid_value(line, entry)
            brought = (*(preset_settings(key, value) if line in grid.presets else ()), *together)
            if base or value != default or any(knob_value(raw, name) != setting for name, setting in together):
                found.append(Point(line, value, tuple((name, value_text(setting)) for name, setting in brought)))
    for key in grid.presets:  # a knob not in the grid now may be again: only a key that is none is refused
        knob_value(raw, key)
    names = [point.name for point in found]
    for point in found:
        if names.count(point.name) > 1:
            raise ParamsError(f"{SECTION}.knobs.{point.knob}: two values share the experiment name {point.name}")
    return found


def numeric(values: Sequence[Any]) -> bool:
    """Whether a knob's values are all numbers: a line with an order (a source of images has none)."""
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def line_order(values: Sequence[Any]) -> list[Any]:
    """A knob's values in the order the atlas reads them: ascending when all are numbers, else as given."""
    return sorted(values) if numeric(values) else list(values)


UNDECIDED = "undecided"
NOT_MEASURED = "not measured"  # a point whose experiment failed (a training diverged): no verdict there
OUTSIDE = "outside the premise"  # a point where a premise of the paper's theorem fails (Criterion.premise)


@dataclass(frozen=True)
class Where:
    """Where a claim holds along one knob: `said` ("from", "up to", "everywhere", "nowhere in the grid",
    "undecided", "decided at one value only"), the value it names (from, up to), the values at which it was inconclusive and those at
    which it was not measured (the point's run failed)."""

    said: str
    value: Any = None
    inconclusive: tuple[Any, ...] = ()
    unmeasured: tuple[Any, ...] = ()
    outside: tuple[Any, ...] = ()

    def __str__(self) -> str:
        text = self.said if self.value is None else f"{self.said} {value_text(self.value)}"
        if self.said == UNDECIDED and not self.unmeasured:
            return f"{text}: inconclusive at every value ({', '.join(map(value_text, self.inconclusive))})"
        if self.said == UNDECIDED:
            text += ": decided at no value"
        for values, what in ((self.inconclusive, "inconclusive"), (self.unmeasured, "not measured"),
                             (self.outside, "outside the theorem's premise")):
            if values:
                text += f" ({what} at " + ", ".join(map(value_text, values)) + ": not read as a flip)"
        return text


def where_it_holds(line: Sequence[tuple[Any, str]]) -> Where:
    """Where a claim holds along a knob, from its verdict at each value (`line`, in the knob's order):
    from the smallest value on which it holds at every larger decided value; up to a value when it holds
    below and fails above; everywhere; nowhere in the grid. Inconclusive values are left out of the
    reading and named, and so are values not measured. Values without an order (not all numbers) read value
    by value: "by value: holds at a, fails at b"."""
    unknown = {verdict for _, verdict in line} - {HOLDS, FAILS, INCONCLUSIVE, NOT_MEASURED, OUTSIDE}
    if unknown:
        raise ValueError(f"unknown verdicts {sorted(unknown)}: expected {HOLDS}, {FAILS}, {INCONCLUSIVE}, "
                         f"{NOT_MEASURED} or {OUTSIDE}")
    left_out = {"inconclusive": tuple(value for value, verdict in line if verdict == INCONCLUSIVE),
                "unmeasured": tuple(value for value, verdict in line if verdict == NOT_MEASURED),
                "outside": tuple(value for value, verdict in line if verdict == OUTSIDE)}
    decided = [(value, verdict == HOLDS) for value, verdict in line if verdict in (HOLDS, FAILS)]
    holds = [held for _, held in decided]
    if not decided:
        return Where(UNDECIDED, **left_out)
    if not numeric([value for value, _ in line]):
        return Where("by value: " + ", ".join(f"{HOLDS if held else FAILS} at {value_text(value)}"
                                              for value, held in decided), **left_out)
    if len(decided) == 1:  # one value says nothing of a regime
        return Where(f"decided at one value only: {HOLDS if holds[0] else FAILS} at", decided[0][0], **left_out)
    if all(holds):
        return Where("everywhere", **left_out)
    if not any(holds):
        return Where("nowhere in the grid", **left_out)
    if holds[-1]:
        first = len(holds) - holds[::-1].index(False)  # just past the last failure
        return Where("from", decided[first][0], **left_out)
    last = holds.index(False) - 1  # just before the first failure
    if any(holds[last + 1:]):
        return Where("nowhere in the grid", **left_out)  # back and forth, ending in a failure
    return Where("up to", decided[last][0], **left_out)


# reports/atlas/atlas.csv, long form: one row per claim, criterion and point; a knob's line holds the
# default point too (`default` true), at the knob's default value; a point whose run failed has one row per
# claim, verdicts NOT_MEASURED and the run's error in `failure`; `unchanged` true where the claim's whole
# claims.json record equals the default point's (the knob did not reach what the claim measures)
COLUMNS = ("claim", "criterion", "knob", "value", "default", "verdict", "claim_verdict", "measured", "low",
           "high", "power_line", "failure", "unchanged", "kind", "units")  # kind: the interval's (METHODS);
# units: how many the quantity is taken over (a share's seeds), empty where its group is not one


def read_atlas(path: str | Path) -> list[dict[str, str]]:
    """The rows of the atlas table; none when it has only its header (no atlas made yet)."""
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise ArtifactError(f"{path}: columns {reader.fieldnames} are not {list(COLUMNS)}: remake it with "
                                "`python -m vitheory.atlas table`")
        return list(reader)


def threshold_of(label: str) -> float:
    """The threshold a check's label ends with (`q >= 0.125`, `condition: q <= 0.1`)."""
    return float(label.rsplit(" ", 1)[1])


def share_crossing(line: Sequence[tuple[float, int, int]], threshold: float, confidence: float,
                   draws: int = 2000) -> tuple[float, float, float]:
    """Where a share of seeds crosses `threshold` along a knob: `line` holds (value, seeds meeting, seeds) per
    point; a logistic fit of each seed's outcome against log2 of the value, and its percentile interval at
    `confidence` with every point's seeds resampled (a binomial draw at its share). A resample whose fit
    does not rise crosses nowhere: its crossing counts as past the grid's largest value (inf)."""
    x = np.log2([value for value, _, _ in line])
    meeting, seeds = (np.array([point[i] for point in line], dtype=float) for i in (1, 2))

    def crossing(k: np.ndarray) -> float:
        def loss(ab: np.ndarray) -> float:  # binomial log-likelihood; the small ridge keeps separation finite
            z = ab[0] + ab[1] * x
            return float(np.sum(seeds * np.logaddexp(0, z) - k * z) + 1e-3 * ab[1] ** 2)

        a, b = optimize.minimize(loss, np.zeros(2), method="BFGS").x
        return float(2 ** ((special.logit(threshold) - a) / b)) if b > 0 else math.inf

    rng = np.random.default_rng(0)
    resampled = [crossing(rng.binomial(seeds.astype(int), meeting / seeds)) for _ in range(draws)]
    low, high = np.quantile(resampled, [(1 - confidence) / 2, (1 + confidence) / 2])
    return crossing(meeting), float(low), float(high)


def crossing_lines(rows: Sequence[Mapping[str, str]], reached: Mapping[str, Collection[str]],
                   confidence: float) -> dict[tuple[str, str], str]:
    """(claim, knob) -> where each share criterion of the claim crosses its threshold along the knob, where
    its verdicts turn there (it holds at some values and not at others)."""
    said: dict[tuple[str, str], str] = {}
    lines: dict[tuple[str, str, str], list[Mapping[str, str]]] = {}
    for row in rows:
        if row["kind"] == "share" and row["units"] and row["knob"] in reached.get(row["claim"], ()):
            lines.setdefault((row["claim"], row["knob"], row["criterion"]), []).append(row)
    for (claim, key, label), line in lines.items():
        if {row["verdict"] for row in line} >= {HOLDS, FAILS} and len(line) >= 3:
            points = [(float(json.loads(row["value"])), round(float(row["measured"]) * int(row["units"])),
                       int(row["units"])) for row in line]
            at, low, high = share_crossing(points, threshold_of(label), confidence)
            largest = max(value for value, _, _ in points)
            ends = ", ".join(f"{end:,.0f}" if end <= largest else f"past {largest:,.0f}" for end in (low, high))
            said[claim, key] = (f"`{label}` crosses its threshold at about {at:,.0f} [{ends}] (a logistic fit of "
                                f"each seed's outcome against log2 of the value, its seeds resampled; "
                                f"{confidence:.0%} percentile interval)")
    return said


def number_text(text: str) -> str:
    """A table cell's number, to four significant digits ("" stays "")."""
    return f"{float(text):.4g}" if text else ""


def differing_checks(rows: Sequence[Mapping[str, str]], reached: Mapping[str, Collection[str]]
                     ) -> dict[tuple[str, str], list[str]]:
    """(claim, knob) -> on a line whose values have no order (a source of images), each check of the claim
    whose verdict differs between the values, with its number and interval at each: the comparison a
    reader makes between two sources."""
    checks: dict[tuple[str, str, str], list[Mapping[str, str]]] = {}
    for row in rows:
        if row["knob"] in reached.get(row["claim"], ()) and row["claim_verdict"] != NOT_MEASURED:
            checks.setdefault((row["claim"], row["knob"], row["criterion"]), []).append(row)
    said: dict[tuple[str, str], list[str]] = {}
    for (claim, key, label), line in checks.items():
        values = [json.loads(row["value"]) for row in line]
        if numeric(values) or len({row["verdict"] for row in line}) < 2:
            continue
        said.setdefault((claim, key), []).append(f"`{key}`: `{label}`: " + "; ".join(
            f"{number_text(row['measured'])} [{number_text(row['low'])}, {number_text(row['high'])}] "
            f"({row['verdict']}) at {row['value']}" for row in line))
    return said


def outside_premise(rows: Sequence[Mapping[str, str]]) -> set[tuple[str, str, str]]:
    """(claim, knob, value) of every point where a premise of the claim's theorem does not hold."""
    return {(row["claim"], row["knob"], row["value"]) for row in rows
            if row["criterion"].startswith(PREMISE_LABEL) and row["verdict"] != HOLDS}


def claim_lines(rows: Sequence[Mapping[str, str]]) -> Iterator[tuple[str, str, list[tuple[Any, str]]]]:
    """(claim, knob, [(value, claim verdict)] in the knob's order) for every claim and knob of the table; OUTSIDE
    where a premise does not hold."""
    verdicts: dict[tuple[str, str], dict[str, str]] = {}
    for row in rows:
        verdicts.setdefault((row["claim"], row["knob"]), {})[row["value"]] = row["claim_verdict"]
    for claim, key, value in outside_premise(rows):  # a failed premise makes the point inconclusive; say why
        verdicts[claim, key][value] = OUTSIDE
    for (claim, key), by_value in verdicts.items():
        values = line_order([json.loads(value) for value in by_value])
        yield claim, key, [(value, by_value[value_text(value)]) for value in values]


def where_lines(rows: Sequence[Mapping[str, str]], reached: Mapping[str, Collection[str]],
                not_run: Mapping[str, str] | None = None, confidence: float = 0.95) -> dict[str, list[str]]:
    """Each claim's "where it holds" along every knob that reaches it (`reached`: claim -> the knobs that a
    stage its numbers pass through lists, vitheory.reach), one line naming the grid's knobs that do not,
    then the power line of each inconclusive point and the error of each failed one. `not_run`: knob ->
    what is left to run of it (its values, their cost, the command); a knob none of whose points ran
    reads "not run", never "decided at one value only"."""
    not_run = not_run or {}
    ran = {row["knob"] for row in rows if row["default"] == "false"}  # measured or failed
    crossings = crossing_lines(rows, reached, confidence)
    differing = differing_checks(rows, reached)
    said: dict[str, list[str]] = {}
    for claim, key, line in claim_lines(rows):
        if key not in reached.get(claim, ()):
            continue
        if key not in ran:
            said.setdefault(claim, []).append(f"`{key}`: not run ({not_run.get(key, 'no point of it in the table')})")
            continue
        said.setdefault(claim, []).append(f"`{key}`: {where_it_holds(line)}")
        if (claim, key) in crossings:
            said[claim].append(f"`{key}`: {crossings[claim, key]}")
        said[claim] += differing.get((claim, key), [])
        if key in not_run:
            said[claim].append(f"`{key}`: {not_run[key]}")
    in_table = list(dict.fromkeys(row["knob"] for row in rows))
    absent = [key for key in not_run if key not in in_table]  # a grid knob the table holds no row of yet
    claims = list(dict.fromkeys([*(row["claim"] for row in rows), *reached]))
    for claim in claims:
        for key in absent:
            if key in reached.get(claim, ()):
                said.setdefault(claim, []).append(f"`{key}`: not run ({not_run[key]})")
    knobs = [*in_table, *absent]
    for claim in claims:
        unreached = [key for key in knobs if key not in reached.get(claim, ())]
        if unreached:
            said.setdefault(claim, []).append(
                "not reached by " + ", ".join(f"`{key}`" for key in unreached)
                + ": no stage its numbers pass through lists them (dvc.yaml), so no point of theirs can move it")
    outside = outside_premise(rows)
    for row in rows:
        if row["knob"] not in reached.get(row["claim"], ()):
            continue
        if row["power_line"] and row["default"] == "false" and (row["claim"], row["knob"], row["value"]) not in outside:
            said[row["claim"]].append(f"at `{row['knob']}` = {row['value']}, {row['power_line']}")
        if row["failure"]:
            said[row["claim"]].append(f"at `{row['knob']}` = {row['value']}, not measured: {row['failure']}")
    return said
