from pathlib import Path

import pytest
import yaml

from vitheory.core.config import ParamsView
from vitheory.params import load_params, parse_params

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def default_params() -> ParamsView:
    return load_params(ROOT / "params.yaml")


@pytest.fixture(scope="session")
def quick_params() -> ParamsView:
    """params.yaml with the quick preset merged in, validated."""
    from vitheory.preset import merge

    return parse_params(merge(yaml.safe_load((ROOT / "params.yaml").read_text()),
                              yaml.safe_load((ROOT / "presets/quick.yaml").read_text())))


@pytest.fixture
def small_params() -> ParamsView:
    """The default params, shrunk so that a training run takes a fraction of a second."""
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["generate"]["li_tokens"] |= {"n_train": 64, "n_test": 64}
    raw["train"]["device"] = "cpu"
    raw["train"]["li_vit"] |= {"steps": 20, "log_every": 10}
    raw["train"]["li_vit"]["model"]["width"] = 20
    return parse_params(raw)
