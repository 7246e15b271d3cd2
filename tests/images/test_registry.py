"""The model registry (vitheory.images.params.REAL_MODELS) and everything that names its models agree:
params.yaml's real.models, dvc.yaml's train_real matrix and the metrics the render and report stages
read, the classes that build them, the figures' colours, [PK22]'s trainings.
(tests/images/test_image_models.py trains every registered model one step.)"""

import itertools

import pytest
import yaml
from conftest import ROOT

from vitheory.core.figures import MODEL_COLOURS
from vitheory.images.models import ARCHITECTURES
from vitheory.images.params import REAL_MODELS, RECIPE_KEYS
from vitheory.pk22.trainings import FULL_DATA_MODELS

PIPELINE = yaml.safe_load((ROOT / "dvc.yaml").read_text())
RUNS = next(entry["runs"] for entry in PIPELINE["vars"] if "runs" in entry)
METRICS = "${paths.real_metrics}/"


def test_dvc_yaml_trains_every_registered_model_in_its_order():
    assert RUNS["real_models"] == list(REAL_MODELS), (
        f"dvc.yaml's vars runs.real_models must be the registry's names: {list(REAL_MODELS)}")


@pytest.mark.parametrize("stage", ["render", "report"])
def test_the_stages_reading_every_model_depend_on_every_run(stage):
    """render and report read every train_real run's metrics (vitheory.jsl22): a run left out of their
    deps would not rerun them when it changes."""
    expected = [f"{METRICS}{model}_{pixels}.json"
                for model, pixels in itertools.product(REAL_MODELS, RUNS["real_pixels"])]
    listed = [dep for dep in PIPELINE["stages"][stage]["deps"] if dep.startswith(METRICS)]
    assert listed == expected, f"dvc.yaml stage {stage}'s deps on train_real's metrics must be, in order: {expected}"


def test_params_yaml_has_a_preset_for_every_registered_model_and_no_other():
    given = yaml.safe_load((ROOT / "params.yaml").read_text())["real"]["models"]
    assert list(given) == list(REAL_MODELS)


def test_every_registered_preset_builds_a_class():
    assert {model.preset for model in REAL_MODELS.values()} <= set(ARCHITECTURES), (
        "a preset section in REAL_MODELS has no class in vitheory.images.models.ARCHITECTURES")


def test_every_registered_model_has_its_colour_in_the_figures():
    """render draws every train_real run in its model's colour (vitheory.jsl22.figures): a model without one
    would stop it."""
    uncoloured = [name for name in REAL_MODELS if name not in MODEL_COLOURS]
    assert not uncoloured, f"add a colour for {uncoloured} to vitheory.core.figures.MODEL_COLOURS"


def test_pk22_reads_registered_models():
    assert set(FULL_DATA_MODELS) <= set(REAL_MODELS)


def test_a_stage_that_trains_by_the_recipe_lists_its_keys_and_only_the_models_it_reads():
    """A stage lists the recipe (RECIPE_KEYS) and the real.models.<name> it reads, never the whole `real`
    section: a model added to the registry must rerun no stage but the ones that train or read it. A
    stage that reads a key it does not list stops on it (vitheory.core.config.ParamsView)."""
    for name, stage in PIPELINE["stages"].items():
        listed = [key for key in stage.get("params", []) if isinstance(key, str)]
        assert "real" not in listed and "real.models" not in listed, (
            f"dvc.yaml stage {name} lists all of `real`: list RECIPE_KEYS and the models it reads")
        if any(key.startswith("real.models.") for key in listed) or "real.lr" in listed:
            missing = [key for key in RECIPE_KEYS if key not in listed]
            assert not missing, f"dvc.yaml stage {name} trains by the recipe but does not list {missing}"
