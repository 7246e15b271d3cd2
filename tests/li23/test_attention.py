from dataclasses import replace

import pytest
import torch

from vitheory.core.ensemble import subsample_tokens
from vitheory.core.errors import TrainingDiverged
from vitheory.li23 import tokens
from vitheory.li23.attention import attention_masses, reference_masses, train_li_vit
from vitheory.li23.tokens import CONFUSION, IRRELEVANT, RELEVANT

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
    return tokens.generate(params.generate.li_tokens)


def test_training_is_deterministic_and_logs_every_interval(small_params):
    train, test = _small_data(small_params)
    cfg = replace(small_params.train.li_vit, seeds=2)
    runs = []
    for _ in range(2):
        steps = []
        models = train_li_vit(train, test, cfg, CPU, on_log=lambda step, per_seed: steps.append((step, per_seed)),
                              progress=False)
        runs.append((models, steps))
    assert [s for s, _ in runs[0][1]] == [0, 10, 20]
    assert len(runs[0][1][0][1]) == 2 and set(runs[0][1][0][1][0]) == {"train", "test"}
    assert "attn_relevant_query" in runs[0][1][0][1][0]["test"]
    for first, again in zip(*(models for models, _ in runs)):
        for name, tensor in first.state_dict().items():
            assert torch.equal(tensor, again.state_dict()[name]), name
    # each seed its own model: the two start (and end) apart
    assert not torch.equal(runs[0][0][0].W_O, runs[0][0][1].W_O)


def test_each_seed_trained_together_matches_it_trained_alone(small_params):
    train, test = _small_data(small_params)
    together = train_li_vit(train, test, replace(small_params.train.li_vit, seeds=2), CPU, progress=False)
    alone = train_li_vit(train, test, replace(small_params.train.li_vit, seed=1, seeds=1), CPU, progress=False)
    for name, tensor in alone[0].state_dict().items():
        torch.testing.assert_close(together[1].state_dict()[name], tensor, rtol=1e-4, atol=1e-5)


def test_default_learning_rates_concentrate_attention(default_params):
    """The LI-3 phenomenon at default settings, on a shortened run (well inside the 600 steps)."""
    train, test = tokens.generate(default_params.generate.li_tokens)
    log = {}
    train_li_vit(train, test, replace(default_params.train.li_vit, seeds=1, steps=400, log_every=400), CPU,
                 on_log=lambda step, per_seed: log.__setitem__(step, per_seed[0]["test"]), progress=False)
    assert log[0]["attn_relevant_query"] < 0.3
    assert log[400]["attn_relevant_query"] > 0.9


def test_token_sampling_trains_on_its_own_seeded_draws_and_still_learns(small_params):
    """Half of each example's tokens per step: other steps than with all tokens, the same ones on a
    rerun, and every seed's training loss still falls (20 small steps: from 1.006 to 0.998 at most, as on
    all tokens; a step on nothing, or against the gradient, would not lower it)."""
    train, test = _small_data(small_params)
    losses = []
    half = replace(small_params.train.li_vit, token_fraction=0.5)
    models = train_li_vit(train, test, half, CPU, progress=False,
                          on_log=lambda step, per_seed: losses.append([seed["train"]["loss"] for seed in per_seed]))
    again = train_li_vit(train, test, half, CPU, progress=False)
    every = train_li_vit(train, test, replace(half, token_fraction=1.0), CPU, progress=False)
    for model, rerun, full in zip(models, again, every):
        assert torch.equal(model.W_Q, rerun.W_Q) and not torch.equal(model.W_Q, full.W_Q)
    assert all(last < first for first, last in zip(losses[0], losses[-1]))


def test_diverging_run_names_the_learning_rates(small_params):
    train, test = _small_data(small_params)
    cfg = replace(small_params.train.li_vit, lr_attention=1e30, lr_mlp=1e30)
    with pytest.raises(TrainingDiverged, match=r"lower train\.li_vit\.lr_attention \(now 1e\+30\)"):
        train_li_vit(train, test, cfg, CPU, progress=False)
