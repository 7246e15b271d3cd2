from dataclasses import replace
from pathlib import Path

import pytest

from vitheory.params import Params, load_params

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def default_params() -> Params:
    return load_params(ROOT / "params.yaml")


@pytest.fixture
def small_params(default_params: Params) -> Params:
    """The default params, shrunk so that a training run takes a fraction of a second."""
    tokens = replace(default_params.generate.li_tokens, n_train=64, n_test=64)
    li_vit = replace(default_params.train.li_vit, steps=20, log_every=10,
                     model=replace(default_params.train.li_vit.model, width=20))
    return replace(default_params,
                   generate=replace(default_params.generate, li_tokens=tokens),
                   train=replace(default_params.train, device="cpu", li_vit=li_vit))
