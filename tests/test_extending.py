"""docs/LAYOUT.md, "Adding a claim, a knob, a model", followed to the letter in a temporary copy of the
code: a toy model registered, a toy regime knob, a toy claim on the toy model's runs (the next free id of
[JSL22]). Every edit below is shown in that section (checked here), so the example cannot drift from what
works, and each is placed by parsing the file it edits (a definition, a container's last element, a YAML
block), not by matching its text. In the copy, after the commands the section names (`plots --fix`,
`preset --write-default`) and the toy model's runs written as train_real writes them, every test file the
edits touch runs: the registry's and the model tests, [JSL22]'s claim tests and verdict table, the claims'
docstring ranges and quantities, the figures' colours, the plots check, the default preset and README's
claims table; and the toy knob, model and claim go through params validation, a stage's view, one training
step and `evaluate`."""

import ast
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import yaml
from conftest import ROOT

from vitheory.core.paths import artifact, run_name, runs
from vitheory.jsl22.claims import PAPER as JSL22

LAYOUT = (ROOT / "docs/LAYOUT.md").read_text()
# the toy claim takes its paper's next free id
TOY_CLAIM = f"JSL-{max(int(claim.id.split('-')[1]) for claim in JSL22.claims) + 1}"
LAST_CLAIM = JSL22.claims[-1].id


@dataclass(frozen=True)
class Edit:
    """`added` goes into `file` before the line `place` finds in its text (0-based); `added` is what the
    docs show."""

    file: str
    place: Callable[[str], int]
    added: str

    def apply(self, text: str) -> str:
        lines = text.splitlines(keepends=True)
        at = self.place(text)
        return "".join(lines[:at]) + self.added + "\n" + "".join(lines[at:])


@dataclass(frozen=True)
class Rewrite:
    """In `file`, the first line `find` picks becomes `rewrite` of it; the new line is what the docs show."""

    file: str
    find: Callable[[str], bool]
    rewrite: Callable[[str], str]

    def apply(self, text: str) -> str:
        lines = text.splitlines(keepends=True)
        at = next(i for i, line in enumerate(lines) if self.find(line))
        lines[at] = self.rewrite(lines[at].rstrip("\n")) + "\n"
        return "".join(lines)

    def shown_in(self, text: str) -> str:
        return self.rewrite(next(line for line in text.splitlines() if self.find(line))).strip()


# --- where an edit goes, found by parsing -------------------------------------------------------------


def _top_level(text: str, name: str) -> ast.stmt:
    for node in ast.parse(text).body:
        assigned = getattr(node, "targets", [getattr(node, "target", None)])  # `x = ...` or `x: type = ...`
        targets = [target.id for target in assigned if isinstance(target, ast.Name)]
        if getattr(node, "name", None) == name or name in targets:
            return node
    raise LookupError(f"no top-level {name}")


def after_definition(name: str) -> Callable[[str], int]:
    """After the top-level class or function `name` and the two blank lines that follow it."""
    return lambda text: _top_level(text, name).end_lineno + 2


def before_definition(name: str) -> Callable[[str], int]:
    """Before the top-level definition `name` and the comment lines right above it."""
    def place(text: str) -> int:
        node = _top_level(text, name)
        line = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1
        lines = text.splitlines()
        while line > 0 and lines[line - 1].startswith("#"):
            line -= 1
        return line
    return place


def after_last_element(name: str, keyword: str | None = None) -> Callable[[str], int]:
    """After the last element of the container assigned to `name` (of its call's argument `keyword`; of a
    comprehension's iterable), one element a line."""
    def place(text: str) -> int:
        value = _top_level(text, name).value
        if keyword is not None:
            value = next(arg.value for arg in value.keywords if arg.arg == keyword)
        if isinstance(value, ast.DictComp):
            value = value.generators[0].iter
        return (value.values if isinstance(value, ast.Dict) else value.elts)[-1].end_lineno
    return place


def after_import_from(module: str) -> Callable[[str], int]:
    return lambda text: next(node.end_lineno for node in ast.parse(text).body
                             if isinstance(node, ast.ImportFrom) and node.module == module)


def after_last_field(name: str) -> Callable[[str], int]:
    return lambda text: [node for node in _top_level(text, name).body if isinstance(node, ast.AnnAssign)][-1].end_lineno


def yaml_block(lines: list[str], keys: tuple[str, ...]) -> tuple[int, int]:
    """The lines [start, end) of the block of the nested mapping key `keys`, by indentation; trailing blank
    lines left out."""
    start, end, indent = 0, len(lines), -1
    for key in keys:
        start = next(i for i in range(start, end) if lines[i].lstrip().startswith(f"{key}:")
                     and len(lines[i]) - len(lines[i].lstrip()) > indent)
        indent = len(lines[start]) - len(lines[start].lstrip())
        end = next((i for i in range(start + 1, end)
                    if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) <= indent), end)
        start += 1
    while not lines[end - 1].strip():
        end -= 1
    return start, end


def end_of_yaml_block(*keys: str) -> Callable[[str], int]:
    return lambda text: yaml_block(text.splitlines(), keys)[1]


def after_last_item(prefix: str, *keys: str) -> Callable[[str], int]:
    """After the last item of the YAML list under `keys` that starts with `prefix`."""
    def place(text: str) -> int:
        lines = text.splitlines()
        start, end = yaml_block(lines, keys)
        return max(i for i in range(start, end) if lines[i].strip().startswith(f"- {prefix}")) + 1
    return place


def after_last_row(section: str, prefix: str) -> Callable[[str], int]:
    """After the last Markdown table row of `section` whose first cell starts with `prefix`."""
    def place(text: str) -> int:
        lines = text.splitlines()
        start = lines.index(section)
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        return max(i for i in range(start, end) if lines[i].startswith(f"| {prefix}")) + 1
    return place


def _flow_list_with(line: str, item: str) -> str:
    key, listed = line.split(":", 1)
    return f"{key}: [{', '.join([*yaml.safe_load(listed), item])}]"


MODEL = [
    Edit("vitheory/images/params.py", after_definition("ResNetPreset"), '''@dataclass(frozen=True)
class ToyPreset(Section):
    """vitheory.images.models.ToyNet, less the data's shape."""

    hidden: int = knob(at_least(1))  # units of its one hidden layer

'''),
    Edit("vitheory/images/params.py", after_last_element("REAL_MODELS"), '    "toy": RealModel(ToyPreset, "toy MLP"),'),
    Edit("vitheory/images/models.py", after_import_from("vitheory.images.params"),
         "from vitheory.images.params import ToyPreset"),
    Edit("vitheory/images/models.py", before_definition("ARCHITECTURES"), '''class ToyNet(nn.Module):
    """Every pixel into one hidden layer, then the logits."""

    def __init__(self, *, image_size: int, channels: int, n_classes: int, hidden: int):
        super().__init__()
        self.config = {"image_size": image_size, "channels": channels, "n_classes": n_classes, "hidden": hidden}
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(channels * image_size ** 2, hidden), nn.ReLU(),
                                 nn.Linear(hidden, n_classes))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.net(images)

'''),
    Edit("vitheory/images/models.py", after_last_element("ARCHITECTURES"), "    ToyPreset: ToyNet,"),
    Edit("vitheory/core/figures.py", after_last_element("MODEL_COLOURS"), '    ("toy", 8),'),
    Edit("params.yaml", end_of_yaml_block("real", "models"), "    toy:\n      hidden: 8           # units of its one hidden layer"),
    Rewrite("dvc.yaml", lambda line: line.lstrip().startswith("real_models: ["),
            lambda line: _flow_list_with(line, "toy")),
    *(Edit("dvc.yaml", after_last_item("${paths.real_metrics}/", "stages", stage, "deps"),
           "      - ${paths.real_metrics}/toy_natural.json\n      - ${paths.real_metrics}/toy_permuted.json")
      for stage in ("render", "report")),
]
KNOB = [
    Edit("vitheory/images/params.py", after_last_field("RecipeParams"),
         '    label_smoothing: float = knob(Rule(lambda v: 0 <= v < 1, "in [0, 1)"))  # of the cross-entropy'),
    Edit("params.yaml", end_of_yaml_block("real"),
         "  label_smoothing: 0.0    # of the cross-entropy: 0 trains on the labels as they are"),
    *(Edit("dvc.yaml", after_last_item("real.compile_by_kind", "stages", stage, "params"), "      - real.label_smoothing")
      for stage, entry in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].items()
      if "real.compile_by_kind" in entry.get("params", [])),
]
CLAIM = [
    Edit("vitheory/jsl22/claims.py", before_definition("PAPER"), '''def _toy_statistics(samples: Samples) -> Measured:
    return {"toy_natural_accuracy": _mean(samples, "toy_natural")}

'''),
    Edit("vitheory/jsl22/claims.py", after_last_element("PAPER", "claims"), f'''        Claim(
            id="{TOY_CLAIM}",
            data=REAL,
            seeds=("real.seeds",),
            statement="The toy model beats chance on natural images.",
            metric="mean over seeds of the toy model's test accuracy on natural images",
            criteria=(Criterion("toy_natural_accuracy", ">", 0.1, "ours: chance on ten classes", MEAN,
                                bounds=(0.0, 1.0)),),
            evidence=(artifact("real_metrics"),),
            samples=real_samples("toy"),
            statistics=_toy_statistics,
            regime=_jsl5_regime,
        ),'''),
    Rewrite("vitheory/jsl22/claims.py", lambda line: line.startswith('"""[JSL22] claims '),
            lambda line: line.replace(f" to {LAST_CLAIM}:", f" to {TOY_CLAIM}:")),
    Edit("tests/jsl22/test_verdict_table.py", after_last_element("ROWS"), f'''    Row("{TOY_CLAIM}", _real(toy_natural=0.5), HOLDS, "the toy model at 50%, chance 10%"),
    Row("{TOY_CLAIM}", _real(toy_natural=0.05), FAILS, "the toy model at 5%, below chance"),
    Row("{TOY_CLAIM}", _real(toy_natural=[0.05, 0.15] * 4), INCONCLUSIVE, "the toy model's seeds straddle chance"),'''),
    Edit("README.md", after_last_row("## What is reproduced", "JSL-"),
         f"| {TOY_CLAIM} toy model | ours | the toy model's mean test accuracy on natural images | "
         "`toy_natural_accuracy > 0.1` | ours: chance on ten classes | [metrics](reports/real) |"),
]
EDITS = MODEL + KNOB + CLAIM
# the edits by file, as the docs count them
FILES = {edit.file for edit in EDITS}

# run in the copy: the toy knob, model and claim through params validation, a stage's view, one
# training step and `evaluate`
CHECKS = '''
import yaml
import pytest
import torch

from vitheory.core.artifacts import write_json
from vitheory.core.claims import IntervalSettings, evaluate
from vitheory.core.config import view
from vitheory.core.errors import ParamsError
from vitheory.core.paths import artifact, run_name, runs, stages
from vitheory.images.training import build_model, fit
from vitheory.papers import PAPERS
from vitheory.params import load_params, parse_params
from stages.train_real import PARAMS as TRAIN_REAL


def test_params_validation_reads_the_knob_and_the_model_and_names_a_bad_value():
    params = load_params("params.yaml")
    assert params.real.label_smoothing == 0.0 and params.real.models.toy.hidden == 8
    raw = yaml.safe_load(open("params.yaml"))
    raw["real"]["label_smoothing"] = 1.5
    with pytest.raises(ParamsError, match=r"^real.label_smoothing = 1.5 is not allowed: must be in \\[0, 1\\)$"):
        parse_params(raw)


def test_the_toy_models_stage_lists_its_preset_and_the_knob():
    entry = stages()["train_real@toy-natural"]
    seen = view(yaml.safe_load(open("params.yaml")), TRAIN_REAL, entry["params"], "train_real@toy-natural")
    assert seen.real.label_smoothing == 0.0 and seen.real.models.toy.hidden == 8


def test_the_toy_model_trains_a_step():
    model = build_model(load_params("params.yaml").real.models.toy, 8, 1, 10)
    before = [p.detach().clone() for p in model.parameters()]
    fit(model, torch.randn(8, 1, 8, 8), torch.arange(8), load_params("params.yaml").real, epochs=1, seed=0,
        progress=False)
    assert all(not torch.equal(p, b) for p, b in zip(model.parameters(), before))


@pytest.mark.parametrize("accuracy, verdict", [(0.5, "holds"), (0.05, "does not hold")])
def test_evaluate_decides_the_toy_claim_from_the_runs(tmp_path, accuracy, verdict):
    for model in runs("real_models"):
        for pixels in runs("real_pixels"):
            level = accuracy if model == "toy" else 0.9
            write_json(tmp_path / artifact("real_metrics") / f"{run_name(model, pixels)}.json",
                       {"runs": {f"seed_{s}": {"test_accuracy": level + 0.01 * s} for s in range(4)}})
    claim = next(claim for paper in PAPERS for claim in paper.claims if claim.id == "TOY_CLAIM")
    record = evaluate(claim, "JSL22", tmp_path, IntervalSettings(0.95, 1000, 0))
    assert record["measured"]["toy_natural_accuracy"] == pytest.approx(accuracy + 0.015)
    assert record["verdict"] == verdict
'''


# in the copy, after the edits: the commands docs/LAYOUT.md names, then every test file the edits touch
COMMANDS = [["-m", "vitheory.plots", "--fix"], ["-m", "vitheory.preset", "--write-default"]]
TESTS = ["tests/test_toy.py", "tests/images/test_registry.py",
         "tests/images/test_image_models.py::test_every_registered_model_runs_forward_backward_and_one_training_step",
         "tests/jsl22/test_jsl_claims.py", "tests/jsl22/test_verdict_table.py", "tests/test_paper_claims.py",
         "tests/test_figures.py::test_model_colours_tell_every_model_apart", "tests/test_plots.py",
         "tests/core/test_params.py::test_the_default_preset_is_generated_from_params_yaml",
         "tests/test_deciding_rules.py::test_readmes_table_names_every_claim_once_and_the_rules_evaluate_applies",
         # `dvc plots show` draws the toy's training curves only once train_real@toy has run
         "--deselect", "tests/test_plots.py::test_the_count_is_what_dvc_draws"]
COPIED = ("vitheory", "stages", "tests", "presets", "reports", ".dvc/plots", "dvc.yaml", "params.yaml",
          "pyproject.toml", "README.md")


def _shown(edit: Edit | Rewrite) -> str:
    if isinstance(edit, Rewrite):
        return edit.shown_in((ROOT / edit.file).read_text())
    return edit.added.strip("\n")


@pytest.mark.parametrize("edit", EDITS, ids=lambda edit: f"{edit.file}:{_shown(edit)[:30]}")
def test_the_docs_show_every_edit(edit):
    assert _shown(edit) in LAYOUT, f"docs/LAYOUT.md does not show this edit of {edit.file}:\n{_shown(edit)}"


@pytest.mark.parametrize("toy, edits", [("model", MODEL), ("knob", KNOB), ("claim", CLAIM)])
def test_the_docs_count_the_places_each_toy_edits(toy, edits):
    places, files = len(edits), len({edit.file for edit in edits})
    assert f"A {toy} takes {places} edits in {files} files" in " ".join(LAYOUT.split()), (
        f"docs/LAYOUT.md must say: A {toy} takes {places} edits in {files} files")


def test_the_documented_example_adds_a_model_a_knob_and_a_claim(tmp_path):
    copy = tmp_path / "repo"
    for name in COPIED:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(ROOT / name, copy / name)
    for edit in EDITS:
        path = copy / edit.file
        path.write_text(edit.apply(path.read_text()))
    (copy / "tests/test_toy.py").write_text(CHECKS.replace("TOY_CLAIM", TOY_CLAIM))
    # what train_real@toy-<pixels> writes, standing in for its run: the toy at the CNN's accuracies
    for pixels in runs("real_pixels"):
        cnn = (copy / artifact("real_metrics") / f"{run_name('cnn', pixels)}.json").read_text()
        (copy / artifact("real_metrics") / f"{run_name('toy', pixels)}.json").write_text(
            cnn.replace('"model": "cnn"', '"model": "toy"'))
    env = os.environ | {"PYTHONPATH": str(copy)}
    for command in COMMANDS:
        done = subprocess.run([sys.executable, *command], cwd=copy, capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-n", "0", "-p", "no:cacheprovider", *TESTS],
                          cwd=copy, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    passed = [line for line in done.stdout.splitlines() if line.startswith("PASSED")]
    assert any(line.endswith("one_training_step[toy]") for line in passed), done.stdout[-4000:]
    assert any(f"[{TOY_CLAIM} holds" in line for line in passed), done.stdout[-4000:]
    assert len([line for line in passed if "test_toy.py" in line]) == 5
