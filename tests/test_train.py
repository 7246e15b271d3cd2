from dataclasses import replace

import pytest
import torch

from vitheory import li_tokens
from vitheory.analysis import attention_masses, reference_masses
from vitheory.ensemble import subsample_tokens
from vitheory.errors import TrainingDiverged
from vitheory.li_tokens import CONFUSION, IRRELEVANT, RELEVANT
from vitheory.train import train_li_vit

CPU = torch.device("cpu")


def test_attention_masses_of_known_maps():
    kind = torch.tensor([[RELEVANT, RELEVANT, CONFUSION, IRRELEVANT]], dtype=torch.int8)
    uniform = torch.full((1, 4, 4), 0.25)
    masses = attention_masses(uniform, kind)
    assert masses == pytest.approx({"attn_all_query": 0.5, "attn_relevant_query": 0.5,
                                    "attn_confusion_query": 0.5, "attn_irrelevant_query": 0.5})
    # every query looks at itself only: relevant queries put all their mass on relevant tokens
    masses = attention_masses(torch.eye(4)[None], kind)
    assert masses == pytest.approx({"attn_all_query": 0.5, "attn_relevant_query": 1.0,
                                    "attn_confusion_query": 0.0, "attn_irrelevant_query": 0.0})


def test_reference_masses(default_params):
    ref = reference_masses(default_params.generate.li_tokens)
    assert ref == pytest.approx({"uniform": 8 / 40, "all_query_cap": 8 / 9})


def test_subsample_keeps_a_fraction_of_each_examples_tokens():
    x = torch.arange(2 * 10 * 3, dtype=torch.float32).reshape(2, 10, 3)
    kept = subsample_tokens(x, 0.3, torch.Generator().manual_seed(0))
    assert kept.shape == (2, 3, 3)
    for example, rows in zip(x, kept):
        assert all(any(torch.equal(row, token) for token in example) for row in rows)
    assert subsample_tokens(x, 1.0, torch.Generator()) is x


def _small_data(params):
    return li_tokens.generate(params.generate.li_tokens)


def test_training_is_deterministic_and_logs_every_interval(small_params):
    train, test = _small_data(small_params)
    runs = []
    for _ in range(2):
        steps = []
        model = train_li_vit(train, test, small_params.train.li_vit, CPU,
                             on_log=lambda step, metrics: steps.append((step, metrics)), progress=False)
        runs.append((model.state_dict(), steps))
    assert [s for s, _ in runs[0][1]] == [0, 10, 20]
    assert set(runs[0][1][0][1]) == {"train", "test"}
    assert "attn_relevant_query" in runs[0][1][0][1]["test"]
    for name, tensor in runs[0][0].items():
        assert torch.equal(tensor, runs[1][0][name]), name


def test_default_learning_rates_concentrate_attention(default_params):
    """The LI-3 phenomenon at default settings, on a shortened run (well inside the 600 steps)."""
    train, test = li_tokens.generate(default_params.generate.li_tokens)
    log = {}
    train_li_vit(train, test, replace(default_params.train.li_vit, steps=400, log_every=400), CPU,
                 on_log=lambda step, metrics: log.__setitem__(step, metrics["test"]), progress=False)
    assert log[0]["attn_relevant_query"] < 0.3
    assert log[400]["attn_relevant_query"] > 0.9


def test_token_sampling_trains(small_params):
    train, test = _small_data(small_params)
    cfg = replace(small_params.train.li_vit, token_fraction=0.5)
    model = train_li_vit(train, test, cfg, CPU, progress=False)
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_diverging_run_names_the_learning_rates(small_params):
    train, test = _small_data(small_params)
    cfg = replace(small_params.train.li_vit, lr_attention=1e30, lr_mlp=1e30)
    with pytest.raises(TrainingDiverged, match=r"lower train\.li_vit\.lr_attention \(now 1e\+30\)"):
        train_li_vit(train, test, cfg, CPU, progress=False)
