"""LI-7: the rule that sets the initial model error, its positive control, the sweep's runs and record, its
re-derivation, and the direction the claim measures."""

import math
import pickle
from dataclasses import replace
from functools import partial

import pytest
import torch
import yaml
from conftest import ROOT

from vitheory.core.artifacts import read_json, write_json, write_table
from vitheory.core.device import seeded
from vitheory.core.errors import ParamsError
from vitheory.core.intervals import SETTINGS_GROUP
from vitheory.core.paths import artifact
from vitheory.li23 import initial_error, rederive
from vitheory.li23 import phase as phase_module
from vitheory.li23.claims import PAPER, _li7_statistics
from vitheory.li23.initial_error import (
    TRAINED,
    VALUE,
    InitErrorParams,
    displace_value,
    run_sweep,
    summarize,
    towards,
    value_displacement,
)
from vitheory.li23.models import builder
from vitheory.li23.params import cell_tokens
from vitheory.li23.tokens import generate
from vitheory.params import parse_params

LI7 = next(claim for claim in PAPER.claims if claim.id == "LI-7")


def _vit(default_params, seed=3):
    return seeded(seed, builder("vit", default_params.phase.vit.model, default_params.phase.data.dim))


def test_sigma_moves_every_patterns_value_embedding_by_exactly_sigma_and_nothing_else(default_params):
    data = default_params.phase.data
    patterns = generate(cell_tokens(data, 0.2, data.seed + 3))[1].patterns
    default, moved = _vit(default_params), _vit(default_params)
    displace_value(3, moved, sigma=0.7, perturbation_seed=1000)
    with torch.no_grad():
        shifts = (patterns @ moved.W_V.T - patterns @ default.W_V.T).norm(dim=1).tolist()
    assert shifts == pytest.approx([0.7] * len(shifts), abs=1e-5)  # every pattern, not only the largest
    assert value_displacement(moved, default, patterns) == pytest.approx(0.7, abs=1e-5)
    for name in ("W_Q", "W_K", "W_O"):  # the levels of a seed differ in W_V alone
        assert torch.equal(getattr(moved, name), getattr(default, name))
    # the seed's own R: another seed moves another way, sigma 0 not at all
    other = _vit(default_params)
    displace_value(4, other, sigma=0.7, perturbation_seed=1000)
    assert not torch.allclose(other.W_V, moved.W_V)
    still = _vit(default_params)
    displace_value(3, still, sigma=0.0, perturbation_seed=1000)
    assert torch.equal(still.W_V, default.W_V)


def test_a_start_travels_to_a_worker_process(default_params):
    """The phase trainer sends each chunk's start to a worker process (one per core): it must pickle."""
    trained = {name: torch.randn_like(p) for name, p in _vit(default_params).named_parameters()}
    for start in (partial(displace_value, sigma=0.5, perturbation_seed=1000), partial(towards, share=0.5,
                                                                                        references={3: trained})):
        here, there = _vit(default_params), _vit(default_params)
        start(3, here)
        pickle.loads(pickle.dumps(start))(3, there)
        assert all(torch.equal(a, b) for a, b in zip(here.parameters(), there.parameters()))


def test_towards_a_trained_model_interpolates_every_weight(default_params):
    trained = {name: torch.randn_like(p) for name, p in _vit(default_params).named_parameters()}
    for share, expected in ((0.0, lambda d, t: t), (1.0, lambda d, t: d), (0.25, lambda d, t: t + 0.25 * (d - t))):
        model, default = _vit(default_params), _vit(default_params)
        towards(3, model, share=share, references={3: trained})
        for name, weight in model.named_parameters():
            assert torch.allclose(weight, expected(dict(default.named_parameters())[name], trained[name]), atol=1e-6)


def _tiny(default_params, **changes):
    sweep = InitErrorParams(alpha_star=0.2, value_error=(0.0, 1.0), towards_trained=(0.5, 1.0), reference_n_train=32,
                            perturbation_seed=1000, n_train=(2, 8), seeds=2)
    phase = replace(default_params.phase, steps=30, vit=replace(default_params.phase.vit, model=replace(
        default_params.phase.vit.model, width=10)))
    return replace(sweep, **changes), phase


def test_the_sweep_trains_the_default_start_once_as_a_row_of_both_rules_and_records_what_it_set(default_params,
                                                                                              monkeypatch):
    monkeypatch.setattr(phase_module, "chunk_plan", lambda n, device: (n, 1))  # in this process: a start pickles
    sweep, phase = _tiny(default_params)
    rows, record = run_sweep(sweep, phase, torch.device("cpu"))
    assert len(rows) == 2 * 2 * len(sweep.n_train) * sweep.seeds
    def strip(row):
        return {k: v for k, v in row.items() if k not in ("rule", "level")}
    default_value = [strip(r) for r in rows if (r["rule"], r["level"]) == (VALUE, 0.0)]
    default_trained = [strip(r) for r in rows if (r["rule"], r["level"]) == (TRAINED, 1.0)]
    assert default_value == default_trained
    moved = [strip(r) for r in rows if (r["rule"], r["level"]) == (VALUE, 1.0)]
    assert moved != default_value  # the level reaches the training
    assert record["value_displacement"]["1"] == pytest.approx([1.0, 1.0], abs=1e-5)
    assert record["value_displacement"]["0"] == [0.0, 0.0]
    assert len(record["reference"]["test_error"]) == sweep.seeds
    # the same params give the same runs
    assert run_sweep(sweep, phase, torch.device("cpu"))[0] == rows


def test_the_trained_models_examples_are_past_every_cells_and_the_levels_ascend():
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["init_error"]["reference_n_train"] = raw["phase"]["data"]["pool_size"]
    with pytest.raises(ParamsError, match="init_error.reference_n_train"):
        parse_params(raw)
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["init_error"]["value_error"] = [1.0, 0.0]
    with pytest.raises(ParamsError, match="init_error.value_error"):
        parse_params(raw)


# --- the claim's measure ------------------------------------------------------------------------

GRID = (1, 2, 4, 8, 16, 32)


def _rows(value_n_mins, control_n_mins, sigmas=(0.0, 1.0, 2.0), shares=(0.5, 1.0)):
    """Runs that succeed from each seed's N_min on (None: never), per rule and level."""
    rows = []
    for rule, levels, per_seed in ((VALUE, sigmas, value_n_mins), (TRAINED, shares, control_n_mins)):
        for seed, n_mins in enumerate(per_seed):
            for level, start in zip(levels, n_mins):
                rows += [{"rule": rule, "level": level, "model": "vit", "alpha_star": 0.2, "n_train": n, "seed": seed,
                          "test_error": 0.0 if ok else 0.2, "steps_to_zero_train_error": 10,
                          "steps_to_zero_test_error": 10 if ok else -1, "success": int(ok)}
                         for n in GRID for ok in [start is not None and n >= start]]
    return rows


def _samples(rows):
    def units(rule):
        mine = [r for r in rows if r["rule"] == rule]
        return [phase_module.SeedRuns([r for r in mine if r["seed"] == s], "level") for s in sorted({r["seed"] for r in mine})]
    return {"value": units(VALUE), "control": units(TRAINED),
            SETTINGS_GROUP: [{"success_rate": 0.5, "reference_test_error": 0.0}]}


def test_li7_measures_the_rise_from_the_smallest_to_the_largest_error_per_seed():
    """The paper's direction: larger initial error, larger N_min, a positive log ratio; computed the other way
    round (smallest over largest, or the shares' order reversed), this fails."""
    measured = _li7_statistics(_samples(_rows([(2, 4, 8), (4, 4, 16)], [(1, 4), (2, 8)])))
    assert measured["log_n_min_largest_over_smallest_error"] == pytest.approx(2 * math.log(2))
    assert measured["log_n_min_1_over_smallest_error"] == pytest.approx(math.log(2) / 2)
    assert measured["seeds_n_min_larger_at_largest_error"] == 1.0
    assert measured["control_log_n_min_largest_over_smallest_share"] == pytest.approx(math.log(4))
    assert measured["n_min_at_0"] == 2 and measured["n_min_at_2"] == 8  # pooled: from half the seeds on
    assert measured["n_min_above_floor_at_smallest_error"] == 1.0
    falling = _li7_statistics(_samples(_rows([(8, 4, 2), (16, 4, 4)], [(4, 1), (8, 2)])))
    assert falling["log_n_min_largest_over_smallest_error"] < 0
    assert falling["control_log_n_min_largest_over_smallest_share"] < 0
    # a seed never reaching zero test error at the largest sigma counts at twice the grid's largest N
    censored = _li7_statistics(_samples(_rows([(2, 4, None)], [(1, 4)])))
    assert censored["log_n_min_largest_over_smallest_error"] == pytest.approx(math.log(32))


def test_li7_reads_its_runs_and_record(tmp_path):
    rows = _rows([(2, 4, 8)] * 3, [(1, 4)] * 3)
    write_table(tmp_path / artifact("init_error_runs"), list(initial_error.COLUMNS),
                [[row[c] for c in initial_error.COLUMNS] for row in rows])
    write_json(tmp_path / artifact("init_error_metrics"), {
        "n_train": list(GRID), "success_rate_threshold": 0.5, "reference": {"n_train": 32, "test_error": [0.0, 0.02, 0.01]},
        "n_min": summarize(rows, 0.5)})
    measured = LI7.measure(tmp_path)
    assert measured["log_n_min_largest_over_smallest_error"] == pytest.approx(math.log(4))
    assert measured["reference_test_error"] == pytest.approx(0.01)
    assert rederive.init_error(tmp_path) == []
    record = read_json(tmp_path / artifact("init_error_metrics"))
    record["n_min"][VALUE]["2"][0] = 4  # a stored N_min the runs do not give
    write_json(tmp_path / artifact("init_error_metrics"), record)
    assert len(rederive.init_error(tmp_path)) == 1


def test_summarize_gives_each_seeds_n_min_per_rule_and_level():
    summary = summarize(_rows([(2, 4, None), (1, 2, 8)], [(1, 4), (2, 2)]), 0.5)
    assert summary == {VALUE: {"0": [2, 1], "1": [4, 2], "2": [-1, 8]}, TRAINED: {"0.5": [1, 2], "1": [4, 2]}}
