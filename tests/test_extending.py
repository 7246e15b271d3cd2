'''docs/LAYOUT.md, "Adding a claim, a knob, a model", followed to the letter in a temporary copy of the
code: a toy model registered, a toy regime knob, a toy claim on the toy model's runs. Every edit below
is shown in that section (checked here), so the example cannot drift from what works. In the copy, the
registry's own tests and the model tests cover the toy model without being told of it, params
validation accepts the knob and names it when out of range, a stage's view reads what dvc.yaml lists,
the toy model trains a step, and `evaluate` decides the toy claim from the runs' metrics.'''

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

import pytest
from conftest import ROOT

LAYOUT = (ROOT / "docs/LAYOUT.md").read_text()


@dataclass(frozen=True)
class Edit:
    """In `file`, every `old` becomes `new`; what `new` adds to `old` is what the docs show."""

    file: str
    old: str
    new: str

    @property
    def shown(self) -> str:
        return self.new.replace(self.old, "").strip("\n")


def insert_after(file: str, anchor: str, added: str) -> Edit:
    return Edit(file, anchor, f"{anchor}\n{added}")


def insert_before(file: str, anchor: str, added: str) -> Edit:
    return Edit(file, anchor, f"{added}\n{anchor}")


MODEL = [
    insert_before("vitheory/images/params.py", "# The model registry: every model", '''@dataclass(frozen=True)
class ToyPreset(Section):
    """vitheory.images.models.ToyNet, less the data's shape."""

    hidden: int = knob(at_least(1))  # units of its one hidden layer

'''),
    insert_after("vitheory/images/params.py", '    "cnn": ResNetPreset,', '    "toy": ToyPreset,'),
    insert_after("vitheory/images/models.py", "from vitheory.images.params import ResNetPreset, ViTPreset",
                 "from vitheory.images.params import ToyPreset"),
    insert_before("vitheory/images/models.py", "# the class each preset section builds", '''class ToyNet(nn.Module):
    """Every pixel into one hidden layer, then the logits."""

    def __init__(self, *, image_size: int, channels: int, n_classes: int, hidden: int):
        super().__init__()
        self.config = {"image_size": image_size, "channels": channels, "n_classes": n_classes, "hidden": hidden}
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(channels * image_size ** 2, hidden), nn.ReLU(),
                                 nn.Linear(hidden, n_classes))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.net(images)

'''),
    insert_after("vitheory/images/models.py", "    ResNetPreset: SmallResNet,", "    ToyPreset: ToyNet,"),
    insert_after("params.yaml",
                 "      blocks: [2, 3]      # residual blocks per stage: PK-3/PK-4 read the 4 that keep the resolution",
                 "    toy:\n      hidden: 8           # units of its one hidden layer"),
    Edit("dvc.yaml", "real_models: [vit, vit_positional, cnn]", "real_models: [vit, vit_positional, cnn, toy]"),
    insert_after("dvc.yaml", "      - ${paths.real_metrics}/cnn_permuted.json",
                 "      - ${paths.real_metrics}/toy_natural.json\n      - ${paths.real_metrics}/toy_permuted.json"),
]
KNOB = [
    insert_after("vitheory/images/params.py",
                 "    compile_by_kind: CompileParams = knob()  # torch.compile, one switch per model kind",
                 '    label_smoothing: float = knob(Rule(lambda v: 0 <= v < 1, "in [0, 1)"))  # of the cross-entropy'),
    insert_after("params.yaml",
                 "    alternet: false       # pk_train's AlterNet",
                 "  label_smoothing: 0.0    # of the cross-entropy: 0 trains on the labels as they are"),
    insert_after("dvc.yaml", "      - real.compile_by_kind", "      - real.label_smoothing"),
]
CLAIM = [
    insert_before("vitheory/jsl22/claims.py", "PAPER = Paper(", '''def _toy_statistics(samples: Samples) -> Measured:
    return {"toy_natural_accuracy": _mean(samples, "toy_natural")}

'''),
    insert_after("vitheory/jsl22/claims.py", "    claims=(", '''        Claim(
            id="TOY-1",
            data=REAL,
            seeds=("real.seeds",),
            statement="The toy model beats chance on natural images.",
            metric="mean over seeds of the toy model's test accuracy on natural images",
            criteria=(Criterion("toy_natural_accuracy", ">", 0.1, "ours: chance on ten classes", MEAN,
                                bounds=(0.0, 1.0)),),
            evidence=(artifact("real_metrics"),),
            samples=_real_samples,
            statistics=_toy_statistics,
            regime=_jsl5_regime,
        ),'''),
]

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
    claim = next(claim for paper in PAPERS for claim in paper.claims if claim.id == "TOY-1")
    record = evaluate(claim, "JSL22", tmp_path, IntervalSettings(0.95, 1000, 0))
    assert record["measured"]["toy_natural_accuracy"] == pytest.approx(accuracy + 0.015)
    assert record["verdict"] == verdict
'''


@pytest.mark.parametrize("edit", MODEL + KNOB + CLAIM, ids=lambda edit: f"{edit.file}:{edit.shown[:30]}")
def test_the_docs_show_every_edit(edit):
    assert edit.shown in LAYOUT, f"docs/LAYOUT.md does not show this edit of {edit.file}:\n{edit.shown}"


def test_the_documented_example_adds_a_model_a_knob_and_a_claim(tmp_path):
    copy = tmp_path / "repo"
    for folder in ("vitheory", "stages", "tests", "presets"):
        shutil.copytree(ROOT / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for file in ("dvc.yaml", "params.yaml", "pyproject.toml"):
        shutil.copy(ROOT / file, copy / file)
    for edit in MODEL + KNOB + CLAIM:
        path = copy / edit.file
        text = path.read_text()
        assert edit.old in text, f"{edit.file} no longer holds {edit.old!r}: update the example and docs/LAYOUT.md"
        path.write_text(text.replace(edit.old, edit.new))
    (copy / "tests/test_toy.py").write_text(CHECKS)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", "-n", "0", "-p", "no:cacheprovider", "tests/test_toy.py",
         "tests/images/test_registry.py", "tests/images/test_image_models.py::"
         "test_every_registered_model_runs_forward_backward_and_one_training_step"],
        cwd=copy, capture_output=True, text=True, env=os.environ | {"PYTHONPATH": str(copy)})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    passed = [line for line in done.stdout.splitlines() if line.startswith("PASSED")]
    assert any(line.endswith("one_training_step[toy]") for line in passed), done.stdout[-4000:]
    assert len([line for line in passed if "test_toy.py" in line]) == 5
