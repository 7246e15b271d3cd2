"""What `dvc plots show` draws: the Vega-Lite templates of `.dvc/plots/`, one per grouping a claim
compares, and every plot dvc.yaml declares, checked and counted.

Each table plot in dvc.yaml names its `x`, its `y` and one of `TEMPLATES`: the template colours the
rows by the column its claim compares (`model`, `strategy`, `alpha_star`, ...) and gives every other
grouping of the table (`normalisation`, `metric`, ...) its own panel, so that no plot mixes unrelated
series and none is drawn against the row index (DVC's default when a plot names no `x`). DVC fills
the anchors (data, x, y, their labels, the title); each row's `rev` sets the mark's shape (a line's
dash), so that `dvc plots diff` tells the revisions apart in the claim's colours.

    python -m vitheory.plots            # how many plots `dvc plots show` draws, tables and images apart
    python -m vitheory.plots --check    # exit 1 and say what is wrong: a stale template, a bad plot
    python -m vitheory.plots --fix      # write the templates
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from matplotlib.colors import to_hex

from vitheory.core.figures import MODEL_COLOURS
from vitheory.core.paths import DVC_YAML, ROOT, stages

TEMPLATE_DIR = ROOT / ".dvc" / "plots"
IMAGES = (".png", ".jpg", ".jpeg", ".gif", ".svg")  # DVC draws these as images, not Vega
# the columns that split a table into series: one a plot mixes unless its template colours or panels by it
GROUPS = ("model", "strategy", "alpha_star", "noise_radius", "rule", "level", "method", "normalisation", "experiment",
          "finetuned", "which", "split", "metric")


@dataclass(frozen=True)
class Grouping:
    """A template: rows coloured by `colour`, one panel per value of `panels` (one: wrapped; two:
    columns and rows), points, or one line per seed for a logged series."""

    colour: str
    panels: tuple[str, ...] = ()
    lines: bool = False


TEMPLATES = {
    "by_model": Grouping("model"),
    "by_model_per_normalisation": Grouping("model", ("normalisation",)),
    "by_model_per_which": Grouping("model", ("which",)),
    "by_alpha_star": Grouping("alpha_star"),
    "by_noise_radius": Grouping("noise_radius", ("alpha_star",)),
    "by_level_per_rule": Grouping("level", ("rule", "alpha_star")),
    "by_strategy": Grouping("strategy"),
    "by_strategy_per_experiment": Grouping("strategy", ("experiment", "finetuned")),
    "by_method": Grouping("method"),
    "history": Grouping("split", ("metric",), lines=True),  # a long-form log: one panel per quantity
}


def _anchor(name: str) -> str:
    return f"<DVC_METRIC_{name.upper()}>"


def _nominal(field: str, **extra: Any) -> dict[str, Any]:
    return {"field": field, "type": "nominal", **extra}


def _model_scale(column: str) -> dict[str, Any]:
    """Each model in its colour of the figures (vitheory.core.figures.MODEL_COLOURS)."""
    if column != "model":
        return {}
    return {"scale": {"domain": list(MODEL_COLOURS), "range": [to_hex(c) for c in MODEL_COLOURS.values()]}}


def template(grouping: Grouping) -> dict[str, Any]:
    """The Vega-Lite specification of one grouping, with DVC's anchors."""
    encoding: dict[str, Any] = {
        "x": {"field": _anchor("x"), "type": "quantitative", "title": _anchor("x_label")},
        "y": {"field": _anchor("y"), "type": "quantitative", "title": _anchor("y_label")},
        "color": _nominal(grouping.colour, **_model_scale(grouping.colour)),
        "strokeDash" if grouping.lines else "shape": _nominal("rev"),
    }
    if grouping.lines:
        encoding["detail"] = _nominal("seed")
    if len(grouping.panels) == 1:
        encoding["facet"] = _nominal(grouping.panels[0], columns=3)
    elif grouping.panels:
        encoding |= {"column": _nominal(grouping.panels[0]), "row": _nominal(grouping.panels[1])}
    spec = {"$schema": "https://vega.github.io/schema/vega-lite/v5.json",
            "data": {"values": _anchor("data")},
            "title": {"text": _anchor("title"), "anchor": "middle"},
            "width": 300, "height": 200,
            "mark": {"type": "line" if grouping.lines else "point", "tooltip": {"content": "data"}},
            "encoding": encoding}
    if grouping.panels:
        spec["resolve"] = {"scale": {"y": "independent"}}  # each panel on its own scale: metrics differ
    return spec


def template_text(name: str) -> str:
    return json.dumps(template(TEMPLATES[name]), indent=2) + "\n"


def stale_templates(folder: Path = TEMPLATE_DIR) -> list[str]:
    """The templates of `folder` that differ from `TEMPLATES`, are missing, or are not in it."""
    written = {path.stem for path in folder.glob("*.json")}
    return sorted(name for name in set(TEMPLATES) | written
                  if name not in TEMPLATES or not (folder / f"{name}.json").is_file()
                  or (folder / f"{name}.json").read_text() != template_text(name))


def write_templates(folder: Path = TEMPLATE_DIR) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in TEMPLATES:
        (folder / f"{name}.json").write_text(template_text(name))


@dataclass(frozen=True)
class Plot:
    """One plot `dvc plots show` draws: its id, the files whose columns it draws, and its properties."""

    id: str
    files: tuple[str, ...]
    props: dict[str, Any]

    @property
    def image(self) -> bool:
        return self.id.endswith(IMAGES)


def _files(path: str, root: Path) -> list[str]:
    """The files DVC draws of a plot output: the file, or every file under the folder."""
    folder = root / path
    if not folder.is_dir():
        return [path]
    return sorted(str(file.relative_to(root)) for file in folder.rglob("*") if file.is_file())


def declared_plots(pipeline: dict[str, Any] | None = None, root: Path = ROOT) -> Iterator[Plot]:
    """Every plot `dvc plots show` draws of `pipeline` (dvc.yaml's stages, expanded, and its top-level
    `plots`): one per file of each stage's `plots` outputs (a folder's files as they are in `root`),
    one per top-level definition."""
    if pipeline is None:
        pipeline = {"stages": stages(), "plots": yaml.safe_load(DVC_YAML.read_text()).get("plots", [])}
    for stage in pipeline["stages"].values():
        for entry in stage.get("plots", []):
            path, props = next(iter(entry.items())) if isinstance(entry, dict) else (entry, {})
            for file in _files(path, root):
                yield Plot(file, (file,), props or {})
    for definition in pipeline.get("plots", []):
        (name, props), = definition.items()
        yield Plot(name, tuple(props["y"]), props)


def _table(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """A table's columns and rows (DVCLive's series are tab-separated)."""
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t" if path.suffix == ".tsv" else ",")
        return list(reader.fieldnames or []), list(reader)


def problems(plot: Plot, root: Path = ROOT) -> list[str]:
    """What is wrong with one plot, each as a line: no `x` (DVC draws it against the row index), a
    template that is not one of `TEMPLATES` or DVC's, a grouping column the template does not have, or
    a column of several values that neither its colour nor its panels separate (mixed series)."""
    if plot.image:
        return []
    props = plot.props
    if "x" not in props:
        return [f"{plot.id}: no x, so DVC draws it against the row index: name its x column in dvc.yaml"]
    grouping = TEMPLATES.get(props.get("template", ""))
    apart = {grouping.colour, *grouping.panels} if grouping else set()
    found = []
    for file in plot.files:
        if not (root / file).is_file():
            continue  # not built yet: DVC draws nothing of it
        columns, rows = _table(root / file)
        missing = sorted(apart - set(columns))
        if missing:
            found.append(f"{plot.id}: template {props['template']} groups by {missing}, not columns of {file}")
        mixed = [column for column in GROUPS if column in columns and column not in apart
                 and column not in (props["x"], props.get("y")) and len({row[column] for row in rows}) > 1]
        if mixed:
            found.append(f"{plot.id}: {file} mixes the series of {mixed} in one colour: give it a template of "
                         "vitheory.plots.TEMPLATES that colours or panels by them")
    return found


def check(root: Path = ROOT) -> list[str]:
    """Every problem of dvc.yaml's plots and of the templates in `.dvc/plots/`."""
    stale = [f".dvc/plots/{name}.json differs from vitheory.plots.TEMPLATES: run python -m vitheory.plots --fix"
             for name in stale_templates(root / ".dvc" / "plots")]
    return stale + [line for plot in declared_plots(root=root) for line in problems(plot, root)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if a template or a plot is wrong")
    mode.add_argument("--fix", action="store_true", help="write the templates of .dvc/plots/")
    args = parser.parse_args(argv)
    if args.fix:
        write_templates()
        return 0
    if args.check:
        found = check()
        print("\n".join(found) or "dvc.yaml's plots and .dvc/plots/ agree")
        return 1 if found else 0
    plots = list(declared_plots())
    images = sum(plot.image for plot in plots)
    print(f"{len(plots)} plots: {len(plots) - images} drawn from tables and series, {images} images")
    return 0


if __name__ == "__main__":
    sys.exit(main())
