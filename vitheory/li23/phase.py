"""[LI23] Figure 1: sample complexity against the fraction of label-relevant tokens (LI-1, LI-2).

Every cell (model, alpha*, N, seed) is one small training run; all of them run as stacked
ensembles (vitheory.ensemble), in chunks spread over worker processes on a CPU and as one stack on
a GPU. A run of size N trains on the first N examples of its (alpha*, seed) pool, so runs of one
seed see nested training sets, and shares its initialisation and mini-batch generator with the other
runs of its seed (common random numbers make the curves over N and alpha* less noisy). Every example
holds phase.data.confusion_tokens confusion tokens at every alpha*; a cell with no more relevant tokens
than that lies outside Theorem 1's premise alpha# < alpha* and is not run: N_min, steps and their
exponents are read over the grid's other alpha* (the loader keeps at least three of them).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from vitheory.core.artifacts import read_table
from vitheory.core.device import seeded
from vitheory.core.ensemble import Ensemble, EnsembleRecipe, Stacked, chunk_plan, loss_and_error, train_ensemble
from vitheory.core.paths import artifact, runs
from vitheory.core.processes import worker_pool
from vitheory.li23.models import builder
from vitheory.li23.params import CNNRecipe, GridParams, PhaseParams, ViTRecipe, cell_tokens
from vitheory.li23.tokens import generate

# sets a freshly built model's initial weights in place, from its seed
Start = Callable[[int, nn.Module], None]

COLUMNS = {"model": str, "alpha_star": float, "n_train": int, "seed": int, "test_error": float,
           "steps_to_zero_train_error": int, "steps_to_zero_test_error": int, "success": int}


def runs_path(grid: str, model: str) -> Path:
    """The table of one model's runs on one grid (written by the phase_diagram@<model> stage)."""
    return artifact("phase_runs") / grid / f"{model}.csv"


def by_alpha(values: dict[str, float | None]) -> list[tuple[float, float | None]]:
    """An alpha*-keyed map of the phase metrics (keys like "0.15") as (alpha*, value) pairs, ascending."""
    return sorted((float(alpha), value) for alpha, value in values.items())


@dataclass(frozen=True)
class Cell:
    alpha_star: float
    n_train: int
    seed: int


def cells(grid: GridParams) -> list[Cell]:
    return [Cell(a, n, s) for a in grid.alpha_star for s in range(grid.seeds) for n in grid.n_train]


def sgd_recipe(cfg: PhaseParams, model: str) -> EnsembleRecipe:
    """The phase recipe's SGD for one model: its steps, batches, checks and fixed step sizes."""
    recipe: ViTRecipe | CNNRecipe = getattr(cfg, model)
    return EnsembleRecipe(steps=cfg.steps, batch_size=cfg.batch_size, eval_every=cfg.eval_every,
                          lr={"mixing": recipe.lr_mixing, "mlp": recipe.lr_mlp},
                          lr_keys={"mixing": f"phase.{model}.lr_mixing", "mlp": f"phase.{model}.lr_mlp"})


def run_chunk(cfg: PhaseParams, model: str, chunk: Sequence[Cell], device: str, threads: int,
              start: Start | None = None) -> list[dict]:
    """Train one stack of cells of one alpha*, at the recipe's fixed step sizes; each run records the
    first checked steps with zero training and with zero test error. `start(seed, model)`, where given,
    sets a built model's initial weights in place (LI-7's initial model error)."""
    torch.set_num_threads(threads)
    recipe: ViTRecipe | CNNRecipe = getattr(cfg, model)
    build = builder(model, recipe.model, cfg.data.dim)
    rows = []
    for alpha in sorted({c.alpha_star for c in chunk}):
        group = [c for c in chunk if c.alpha_star == alpha]
        pools = {s: generate(cell_tokens(cfg.data, alpha, cfg.data.seed + s)) for s in sorted({c.seed for c in group})}
        members = [seeded(c.seed, build) for c in group]
        if start is not None:
            for c, member in zip(group, members):
                start(c.seed, member)
        ensemble = Ensemble([member.to(device) for member in members])
        train = Stacked.pad([(pools[c.seed][0].X[:c.n_train], pools[c.seed][0].y[:c.n_train]) for c in group])
        test = Stacked.pad([(pools[c.seed][1].X, pools[c.seed][1].y) for c in group]).to(torch.device(device))
        outcome = train_ensemble(ensemble, train.to(torch.device(device)), [c.seed for c in group],
                                 sgd_recipe(cfg, model), progress=False, test=test)
        _, error = loss_and_error(ensemble, test.X, test.y)
        for c, err, train_step, test_step in zip(group, error.tolist(), outcome.steps_to_zero_train_error,
                                                 outcome.steps_to_zero_test_error):
            rows.append({"model": model, "alpha_star": alpha, "n_train": c.n_train, "seed": c.seed,
                         "test_error": err, "steps_to_zero_train_error": train_step,
                         "steps_to_zero_test_error": test_step, "success": int(err == 0)})
    return rows


def run_grids(cfg: PhaseParams, grids: Sequence[str], model: str, device: torch.device,
              progress: bool = True, start: Start | None = None) -> dict[str, list[dict]]:
    """Every cell of each grid for one model, as rows of `COLUMNS` in that grid's order, but those outside
    Theorem 1's premise (no more relevant than confusion tokens), named on stderr and not run. A cell that
    several grids hold (same alpha*, N and seed: the same data, initialisation and batches) trains
    once and is a row of each. `start`: as `run_chunk`'s."""
    grid_cells = {}
    for grid in grids:
        spec = getattr(cfg.grids, grid)
        outside = cfg.data.outside_premise(spec.alpha_star)
        if outside:  # Theorem 1's bounds say nothing there; the grid's readings are over the rest
            print(f"phase grid {grid}: alpha* {', '.join(f'{a:g}' for a in outside)} not run: outside Theorem 1's "
                  f"premise alpha# < alpha*, with {cfg.data.confusion_tokens} confusion tokens of {cfg.data.n_tokens} "
                  f"and no more relevant ones", file=sys.stderr)
        grid_cells[grid] = [c for c in cells(spec) if c.alpha_star not in outside]
    todo = list(dict.fromkeys(c for listed in grid_cells.values() for c in listed))
    size, workers = chunk_plan(len(todo), device)
    # chunks never mix alpha* values: a chunk of one alpha* trains as one full stack on one data pool
    chunks = []
    for alpha in dict.fromkeys(c.alpha_star for c in todo):
        mine = [c for c in todo if c.alpha_star == alpha]
        chunks += [mine[i:i + size] for i in range(0, len(mine), size)]
    if workers == 1:
        results = [run_chunk(cfg, model, chunk, device.type, torch.get_num_threads(), start) for chunk in chunks]
    else:  # one single-thread process per core
        with worker_pool(workers) as pool:
            jobs = pool.map(run_chunk, [cfg] * len(chunks), [model] * len(chunks), chunks,
                            [device.type] * len(chunks), [1] * len(chunks), [start] * len(chunks))
            results = list(tqdm(jobs, total=len(chunks), desc=f"phase {model} ({', '.join(grids)})",
                                disable=not progress, unit="chunk"))
    by_cell = {Cell(r["alpha_star"], r["n_train"], r["seed"]): r for rows in results for r in rows}
    return {grid: [by_cell[c] for c in listed] for grid, listed in grid_cells.items()}


def run_grid(cfg: PhaseParams, grid: str, model: str, device: torch.device, progress: bool = True,
             start: Start | None = None) -> list[dict]:
    """Every cell of one grid for one model, as rows of `COLUMNS`, in grid order."""
    return run_grids(cfg, [grid], model, device, progress, start)[grid]


# --- analysis -----------------------------------------------------------------------------------


def read_runs(grid: str, model: str, root: Path = Path(".")) -> list[dict]:
    """Rows of one model's phase_diagram table on one grid, typed."""
    return read_table(root / runs_path(grid, model), COLUMNS)


def success_rates(rows: Sequence[dict]) -> dict[float, dict[int, float]]:
    """alpha* -> N -> share of the runs (one per seed) with success."""
    by_cell: dict[tuple[float, int], list[int]] = {}
    for r in rows:
        by_cell.setdefault((r["alpha_star"], r["n_train"]), []).append(r["success"])
    rates: dict[float, dict[int, float]] = {}
    for (alpha, n), outcomes in sorted(by_cell.items()):
        rates.setdefault(alpha, {})[n] = sum(outcomes) / len(outcomes)  # np.mean: 10x slower on a short list
    return rates


def n_min(rates_over_n: dict[int, float], threshold: float) -> int | None:
    """Smallest N from which on every larger N in the grid succeeds at rate >= threshold; None when
    even the largest N does not (the cell is censored: more samples than the grid holds)."""
    found = None
    for n in sorted(rates_over_n, reverse=True):
        if rates_over_n[n] < threshold:
            break
        found = n
    return found


CENSORED_AT = 2  # a seed's N_min never reached in the grid counts at this many times the grid's largest N (LI-6, LI-7)


def n_mins_over(rows: Sequence[dict], column: str, threshold: float) -> dict[float, int | None]:
    """N_min per value of `column`, as LI-1 reads it over alpha*: over the noise radius (LI-6), over an
    initial-error level (LI-7). One seed's rows give that seed's N_min (its success rate is 0 or 1)."""
    relabelled = [dict(row, alpha_star=row[column]) for row in rows]
    return {value: n_min(rates, threshold) for value, rates in success_rates(relabelled).items()}


def fit_exponent(inverse_alpha: Sequence[float], values: Sequence[float | None], ceiling: float) -> float | None:
    """Slope of log(value) against log(1/alpha*) by least squares. A censored value (None: not reached
    inside the grid, so larger than its `ceiling`) enters at the ceiling, not dropped: raising it could
    only steepen the slope where it lies right of the points' mean 1/alpha*, as censoring at small
    alpha* does, so the fit is then a lower bound (the claims report how many values were censored)."""
    points = [(math.log(x), math.log(ceiling if v is None else v)) for x, v in zip(inverse_alpha, values)]
    if len(points) < 2 or len({x for x, _ in points}) < 2:
        return None
    xs, ys = np.array(points).T
    return float(np.polyfit(xs, ys, 1)[0])


def mean_steps(rows: Sequence[dict], budget: int) -> dict[float, float]:
    """alpha* -> mean SGD steps to zero test error (Theorem 1's T) at the largest N over every seed; a
    seed that never got there within the step `budget` counts at the budget (censored: the mean is then
    a lower bound, never a mean of the lucky seeds alone)."""
    largest = max(r["n_train"] for r in rows)
    by_alpha: dict[float, list[int]] = {}
    for r in rows:
        if r["n_train"] == largest:
            steps = r["steps_to_zero_test_error"]
            by_alpha.setdefault(r["alpha_star"], []).append(budget if steps < 0 else steps)
    return {alpha: sum(steps) / len(steps) for alpha, steps in sorted(by_alpha.items())}


def by_seed(rows: Sequence[dict]) -> list[list[dict]]:
    """The runs of each seed, in seed order: the units a bootstrap resamples."""
    return [[r for r in rows if r["seed"] == seed] for seed in sorted({r["seed"] for r in rows})]


def scaling(units: Sequence[Sequence[dict]], threshold: float, budget: int
            ) -> tuple[dict[float, int | None], dict[float, float], float | None, float | None]:
    """N_min and mean steps per alpha*, and their exponents against 1/alpha*, from the runs of each unit
    (a seed; a resample may hold one seed several times, each counted as its own). A censored N_min
    (None) enters its fit at the grid's largest N, a censored step count at the `budget`."""
    rows = [dict(row, seed=i) for i, unit in enumerate(units) for row in unit]
    alphas = sorted({r["alpha_star"] for r in rows})
    inverse = [1 / a for a in alphas]
    nmins = {a: n_min(rates, threshold) for a, rates in success_rates(rows).items()}
    steps = mean_steps(rows, budget)
    largest = max(r["n_train"] for r in rows)
    return (nmins, steps, fit_exponent(inverse, [nmins[a] for a in alphas], largest),
            fit_exponent(inverse, [steps[a] for a in alphas], budget))


def summarize(rows: Sequence[dict], threshold: float, budget: int) -> dict:
    """The point estimates the scaling figure draws: N_min and steps per alpha*, both exponents against
    1/alpha*, and the alpha* whose N_min the grid censors. Their intervals are the claims' (LI-1, LI-2),
    computed there alone, so that no two files give one number two intervals."""
    nmins, steps, n_exp, step_exp = scaling(by_seed(rows), threshold, budget)
    # numbers and alpha*-keyed maps of numbers only, -1 for "never reached in the grid", so that every
    # value reads as a number
    return {"n_min": {str(a): -1 if n is None else n for a, n in nmins.items()},
            "steps": {str(a): value for a, value in steps.items()},
            "n_min_censored": [a for a, n in nmins.items() if n is None],
            "n_min_exponent": n_exp, "steps_exponent": step_exp}


PHASE_FIT_KEYS = ["phase.fit", "phase.steps", "phase.data", "phase.grids"]  # what fit_all reads: phase_fit's params


def fit_all(cfg: PhaseParams, root: Path = Path(".")) -> dict:
    """phase_fit's metrics: `summarize` of every model's runs on every grid, with the settings the claims
    read (the success-rate threshold of N_min, the step budget at which a step count is censored) and each
    grid's alpha* outside Theorem 1's premise (not run, so in no reading)."""
    return {"success_rate_threshold": cfg.fit.success_rate, "step_budget": cfg.steps,
            "outside_premise": {grid: cfg.data.outside_premise(getattr(cfg.grids, grid).alpha_star)
                                for grid in runs("phase_grids")},
            "grids": {grid: {model: summarize(read_runs(grid, model, root), cfg.fit.success_rate, cfg.steps)
                             for model in runs("phase_models")} for grid in runs("phase_grids")}}
