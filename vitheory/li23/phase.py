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

import functools
import math
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from vitheory.core.artifacts import read_table
from vitheory.core.device import seeded
from vitheory.core.errors import ArtifactError
from vitheory.core.ensemble import Ensemble, EnsembleRecipe, Stacked, chunk_plan, loss_and_error, train_ensemble
from vitheory.core.paths import artifact, runs
from vitheory.core.processes import worker_pool
from vitheory.core.units import seed_units
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


def fit_exponent(inverse_alpha: Sequence[float], values: Sequence[float | None], ceiling: float) -> float | None:
    """Slope of log(value) against log(1/alpha*) by least squares. A censored value (None: not reached
    inside the grid, so larger than its `ceiling`) enters at the ceiling, not dropped: raising it could
    only steepen the slope where it lies right of the points' mean 1/alpha*, as censoring at small
    alpha* does, so the fit is then a lower bound (the claims report how many values were censored)."""
    return _slope(tuple((math.log(x), math.log(ceiling if v is None else v)) for x, v in zip(inverse_alpha, values)))


@functools.lru_cache(maxsize=65536)  # a seed plan fits the same few N_min patterns hundreds of thousands of times
def _slope(points: tuple[tuple[float, float], ...]) -> float | None:
    if len(points) < 2 or len({x for x, _ in points}) < 2:
        return None
    xs, ys = np.array(points).T
    return float(np.polyfit(xs, ys, 1)[0])


@dataclass(frozen=True, eq=False)
class SeedRuns:
    """One seed's runs over a grid of `column` (alpha* for LI-1 and LI-2, the noise radius for LI-6, the initial
    error for LI-7) by N: the unit those claims resample, its rows and its cells as arrays built once (a seed
    plan measures thousands of resamples of the same units; copying their rows was its cost)."""

    rows: Sequence[dict]
    column: str = "alpha_star"
    _n_mins: dict[float, dict[float, int | None]] = field(default_factory=dict, repr=False)  # by threshold

    def __iter__(self) -> Iterator[dict]:
        return iter(self.rows)

    @functools.cached_property
    def grid(self) -> tuple[tuple[float, ...], tuple[int, ...]]:
        """The column's values and the N the seed ran, ascending."""
        return tuple(sorted({r[self.column] for r in self.rows})), tuple(sorted({r["n_train"] for r in self.rows}))

    @functools.cached_property
    def success(self) -> np.ndarray:
        """value x N: the run's success (0 or 1); ArtifactError when a cell has no run or two."""
        values, ns = self.grid
        cells = np.full((len(values), len(ns)), np.nan)
        for r in self.rows:
            cells[values.index(r[self.column]), ns.index(r["n_train"])] = r["success"]
        if len(self.rows) != cells.size or np.isnan(cells).any():
            raise ArtifactError(f"seed {self.rows[0]['seed']}'s runs are not one per cell of {self.column} "
                                f"{list(values)} x N {list(ns)}: rerun the stage that wrote them (`dvc repro -f`)")
        return cells

    @functools.cached_property
    def steps(self) -> np.ndarray:
        """Per value: the SGD steps to zero test error at the largest N (-1: never within the budget)."""
        values, ns = self.grid
        found = np.full(len(values), np.nan)
        for r in self.rows:
            if r["n_train"] == ns[-1]:
                found[values.index(r[self.column])] = r["steps_to_zero_test_error"]
        if np.isnan(found).any():
            raise ArtifactError(f"seed {self.rows[0]['seed']}'s runs lack a {self.column} at N = {ns[-1]}: rerun the "
                                "stage that wrote them (`dvc repro -f`)")
        return found

    def n_mins(self, threshold: float) -> dict[float, int | None]:
        """The seed's own N_min per value (its success rate is 0 or 1), as LI-1 reads N_min over alpha*."""
        if threshold not in self._n_mins:
            self._n_mins[threshold] = pooled_n_mins([self], threshold)
        return self._n_mins[threshold]


def by_seed(rows: Sequence[dict]) -> list[SeedRuns]:
    """The runs of each seed, in seed order: the units a bootstrap resamples."""
    return seed_units(rows, SeedRuns)


def shared_grid(units: Sequence[SeedRuns]) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """The grid every unit ran; ArtifactError when they differ."""
    grids = {unit.grid for unit in units}
    if len(grids) != 1:
        raise ArtifactError(f"the seeds' runs cover {len(grids)} different grids: rerun the stage that wrote them "
                            "(`dvc repro -f`)")
    return grids.pop()


def pooled_n_mins(units: Sequence[SeedRuns], threshold: float) -> dict[float, int | None]:
    """N_min per value over the units' runs pooled (a resample may hold one seed several times, each counted as
    its own): the smallest N from which on the share of successes stays at or above `threshold`."""
    values, ns = shared_grid(units)
    rates = np.mean([unit.success for unit in units], axis=0)
    return {v: n_min(dict(zip(ns, rates[i])), threshold) for i, v in enumerate(values)}


def n_min_scaling(units: Sequence[SeedRuns], threshold: float) -> tuple[dict[float, int | None], float | None]:
    """N_min per alpha* over the units' runs, pooled, and its exponent against 1/alpha*, a censored N_min (None)
    entering the fit at the grid's largest N."""
    alphas, ns = shared_grid(units)
    nmins = pooled_n_mins(units, threshold)
    return nmins, fit_exponent([1 / a for a in alphas], [nmins[a] for a in alphas], ns[-1])


def steps_scaling(units: Sequence[SeedRuns], budget: int) -> tuple[dict[float, float], float | None]:
    """Theorem 1's T per alpha*: the mean over the units of the SGD steps to zero test error at the largest N, a
    seed that never got there within the step `budget` counted at the budget (censored: the mean is then a lower
    bound, never a mean of the lucky seeds alone); and its exponent against 1/alpha*."""
    alphas, _ = shared_grid(units)
    stacked = np.array([unit.steps for unit in units])
    means = np.where(stacked < 0, budget, stacked).mean(axis=0)
    steps = {a: float(means[i]) for i, a in enumerate(alphas)}
    return steps, fit_exponent([1 / a for a in alphas], [steps[a] for a in alphas], budget)


def summarize(rows: Sequence[dict], threshold: float, budget: int) -> dict:
    """The point estimates the scaling figure draws: N_min and steps per alpha*, both exponents against
    1/alpha*, and the alpha* whose N_min the grid censors. Their intervals are the claims' (LI-1, LI-2),
    computed there alone, so that no two files give one number two intervals."""
    units = by_seed(rows)
    (nmins, n_exp), (steps, step_exp) = n_min_scaling(units, threshold), steps_scaling(units, budget)
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
