from dataclasses import replace
from operator import itemgetter

import pytest
import torch
import yaml
from conftest import ROOT

from vitheory.core.errors import ArtifactError
from vitheory.li23 import phase
from vitheory.li23.phase import (
    Cell,
    SeedRuns,
    fit_exponent,
    n_min,
    n_min_scaling,
    run_chunk,
    run_grid,
    run_grids,
    steps_scaling,
    summarize,
)


def test_n_min_is_where_success_stays_above_threshold():
    assert n_min({2: 0.0, 4: 0.6, 8: 0.4, 16: 0.8, 32: 1.0}, 0.5) == 16  # a lucky 4 does not count
    assert n_min({2: 0.6, 4: 1.0}, 0.5) == 2
    assert n_min({2: 0.0, 4: 0.2}, 0.5) is None  # censored: never reached in the grid


def test_fit_exponent_recovers_a_power_law_and_keeps_censored_values_at_the_ceiling():
    inverse = [2.5, 4.0, 5.0, 10.0]
    assert fit_exponent(inverse, [3 * x ** 2 for x in inverse], ceiling=1000) == pytest.approx(2.0)
    # N_min = x^2 up to a grid of 64: the largest 1/alpha* (true 100) is censored and enters at 64, not dropped;
    # right of the points' mean 1/alpha*, that flattens the fit: the exponent is a lower bound
    censored = fit_exponent(inverse, [6.25, 16.0, 25.0, None], ceiling=64)
    assert censored == pytest.approx(fit_exponent(inverse, [6.25, 16.0, 25.0, 64.0], ceiling=64))
    assert censored < 2.0
    assert fit_exponent([2.0, 2.0], [1.0, 3.0], ceiling=10) is None  # one distinct 1/alpha*: no slope


def test_a_seed_that_never_reaches_zero_test_error_counts_at_the_budget():
    units = [SeedRuns([{"alpha_star": 0.5, "n_train": 8, "seed": seed, "success": 1, "steps_to_zero_test_error": steps}])
             for seed, steps in enumerate((10, 30, -1))]
    assert steps_scaling(units, budget=200)[0] == {0.5: pytest.approx((10 + 30 + 200) / 3)}  # not (10 + 30) / 2


def test_a_seed_whose_runs_miss_a_cell_or_another_grid_is_refused_in_one_line():
    row = {"alpha_star": 0.5, "n_train": 8, "seed": 0, "success": 1, "steps_to_zero_test_error": 3}
    missing = SeedRuns([row, dict(row, alpha_star=0.25, n_train=4)])  # neither (0.5, 4) nor (0.25, 8) ran
    with pytest.raises(ArtifactError, match=r"seed 0's runs are not one per cell of alpha_star"):
        n_min_scaling([missing], 0.5)
    with pytest.raises(ArtifactError, match="cover 2 different grids"):
        n_min_scaling([SeedRuns([row]), SeedRuns([dict(row, n_train=16)])], 0.5)


def _rows(n_min_by_alpha, seeds=4, grid=(2, 4, 8, 16, 32, 64)):
    """Runs that succeed exactly from the given N on, for every seed."""
    return [{"model": "vit", "alpha_star": a, "n_train": n, "seed": s, "test_error": 0.0 if n >= m else 0.1,
             "steps_to_zero_train_error": int(10 / a), "steps_to_zero_test_error": int(20 / a),
             "success": int(n >= m)}
            for a, m in n_min_by_alpha.items() for s in range(seeds) for n in grid]


def test_summary_of_an_exact_inverse_square_law():
    rows = _rows({0.5: 4, 0.25: 16, 0.125: 64})
    summary = summarize(rows, threshold=0.5, budget=1000)
    assert summary["n_min"] == {"0.125": 64, "0.25": 16, "0.5": 4}
    assert summary["n_min_censored"] == []
    assert summary["n_min_exponent"] == pytest.approx(2.0)
    assert not any("ci" in key for key in summary)  # the intervals are the claims' alone
    assert summary["steps_exponent"] == pytest.approx(1.0, abs=0.01)


@pytest.fixture(scope="module")
def tiny_phase(default_params):
    phase = default_params.phase
    grid = replace(phase.grids.default, alpha_star=(0.2, 0.4), n_train=(2, 8), seeds=2)
    return replace(phase, grids=replace(phase.grids, default=grid), steps=30,
                   data=replace(phase.data, n_test=40, pool_size=8))


def test_grid_rows_are_complete_and_in_grid_order(tiny_phase):
    rows = run_grid(tiny_phase, "default", "vit", torch.device("cpu"), progress=False)
    assert [(r["alpha_star"], r["seed"], r["n_train"]) for r in rows] == [
        (a, s, n) for a in (0.2, 0.4) for s in (0, 1) for n in (2, 8)]
    for r in rows:
        assert r["success"] == int(r["test_error"] == 0)


def test_a_cell_in_two_grids_trains_once_and_is_a_row_of_each(tiny_phase, monkeypatch):
    wide = replace(tiny_phase.grids.default, alpha_star=(0.1, 0.2), n_train=(2, 4, 8), seeds=1)
    cfg = replace(tiny_phase, grids=replace(tiny_phase.grids, wide=wide))
    trained = []

    def counting(cfg, model, chunk, device, threads, start=None):
        trained.extend(chunk)
        return run_chunk(cfg, model, chunk, device, threads, start)

    monkeypatch.setattr(phase, "chunk_plan", lambda n, device: (4, 1))  # in this process, so it is counted
    monkeypatch.setattr(phase, "run_chunk", counting)
    rows = run_grids(cfg, ["default", "wide"], "vit", torch.device("cpu"), progress=False)
    default_cells = {(a, n, s) for a in (0.2, 0.4) for s in (0, 1) for n in (2, 8)}
    wide_cells = {(a, n, 0) for a in (0.1, 0.2) for n in (2, 4, 8)}
    assert sorted((c.alpha_star, c.n_train, c.seed) for c in trained) == sorted(default_cells | wide_cells)
    for grid, spec in (("default", cfg.grids.default), ("wide", wide)):  # complete, in grid order
        assert [(r["alpha_star"], r["seed"], r["n_train"]) for r in rows[grid]] == [
            (a, s, n) for a in spec.alpha_star for s in range(spec.seeds) for n in spec.n_train]
    shared = {(r["alpha_star"], r["n_train"], r["seed"]): r for r in rows["default"]}
    both = [r for r in rows["wide"] if (r["alpha_star"], r["n_train"], r["seed"]) in shared]
    assert len(both) == 2 and all(r == shared[(r["alpha_star"], r["n_train"], r["seed"])] for r in both)


def test_a_cell_outside_the_premise_is_not_run_and_is_named(tiny_phase, capsys):
    """4 confusion tokens of 20: alpha* 0.2 (4 relevant tokens) lies outside Theorem 1's premise alpha# < alpha*,
    0.4 (8) inside it."""
    cfg = replace(tiny_phase, data=replace(tiny_phase.data, confusion_tokens=4))
    rows = run_grid(cfg, "default", "vit", torch.device("cpu"), progress=False)
    assert [(r["alpha_star"], r["seed"], r["n_train"]) for r in rows] == [(0.4, s, n) for s in (0, 1) for n in (2, 8)]
    assert capsys.readouterr().err.splitlines() == [
        "phase grid default: alpha* 0.2 not run: outside Theorem 1's premise alpha# < alpha*, with 4 confusion "
        "tokens of 20 and no more relevant ones"]


def test_the_fit_records_each_grids_alpha_outside_the_premise(tiny_phase, tmp_path, monkeypatch):
    """phase.json names what the grids left out, from the params phase_fit lists (and verify reads alike)."""
    cfg = replace(tiny_phase, data=replace(tiny_phase.data, confusion_tokens=4))
    monkeypatch.setattr(phase, "read_runs", lambda grid, model, root: [])
    monkeypatch.setattr(phase, "summarize", lambda rows, threshold, budget: {})
    assert phase.fit_all(cfg, tmp_path)["outside_premise"] == {"default": [0.2], "wide": [0.1, 0.15, 0.2]}
    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["phase_fit"]
    assert [key.split("  #")[0] for key in stage["params"]] == phase.PHASE_FIT_KEYS


def test_chunking_does_not_change_results(tiny_phase):
    """Worker processes and chunk sizes are a matter of speed: each cell ends the same either way."""
    cells = [(a, n, s) for a in (0.2, 0.4) for s in (0, 1) for n in (2, 8)]
    whole = run_chunk(tiny_phase, "cnn", [Cell(*c) for c in cells], "cpu", 1)
    pieces = [row for c in cells for row in run_chunk(tiny_phase, "cnn", [Cell(*c)], "cpu", 1)]
    key = itemgetter("alpha_star", "n_train", "seed")
    for a, b in zip(sorted(whole, key=key), sorted(pieces, key=key)):
        assert a["steps_to_zero_train_error"] == b["steps_to_zero_train_error"]
        assert a["steps_to_zero_test_error"] == b["steps_to_zero_test_error"]
        assert a["test_error"] == pytest.approx(b["test_error"], abs=1 / 40)  # at most one test example apart
