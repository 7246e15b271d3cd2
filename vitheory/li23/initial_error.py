"""[LI23] LI-7: the phase diagram's ViT (vitheory.li23.phase) started from initial models of growing error, at
one alpha* and the phase data's noise radius tau.

The rule that sets the initial model error. [LI23]'s abstract names "the initial model error" as the third
factor of the sample complexity; the paper's Assumption 1 (as we read it; the text in shared/seeds holds the
abstract only) bounds it as the distance sigma between the initial value embedding of each pattern, W_V^(0)
mu_j, and an orthonormal set. Our ViT starts at W_V = I, which maps the orthonormal patterns onto themselves:
sigma = 0. A level sigma starts it at W_V = I + sigma R, R a random orthogonal matrix drawn from the seed's own
generator (`perturbation_seed` + seed): every unit vector's image, each pattern's included, lies exactly sigma
from its image under I. W_Q, W_K and W_O start as at sigma = 0 (the same draws), so that the levels of one
seed differ in W_V alone (common random numbers, as the phase grid's).

The positive control, where a smaller initial error is known to need fewer samples: the initial model moved
towards a trained one, every trained weight at W* + share x (W_default - W*), W* the ViT of the same seed
trained by the phase recipe on `reference_n_train` examples of the seed's pool that no cell trains on (the
pool's examples past the sweep's largest N); share 1 is the default start, share 0 the trained model.

Every level is one grid of N x seeds trained by the phase trainer with the phase recipe (phase.data,
phase.steps, batch size, check interval and ViT), so that the default start's cells are the noise sweep's
and the phase diagram's cells at the same alpha*, tau and N; it trains once and is a row of both rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from types import SimpleNamespace
from typing import Any

import torch
from torch import nn

from vitheory.core.config import FRACTION, NON_NEGATIVE, Rule, Section, Violation, at_least, knob
from vitheory.core.device import orthonormal_rows, seeded
from vitheory.core.ensemble import Ensemble, Stacked, loss_and_error, train_ensemble
from vitheory.core.units import seed_units
from vitheory.li23.models import builder
from vitheory.li23.params import GridParams, cell_tokens, sweep_alpha
from vitheory.li23.phase import COLUMNS as PHASE_COLUMNS, SeedRuns, Start, run_grid, sgd_recipe
from vitheory.li23.tokens import generate

VALUE, TRAINED = "value_error", "towards_trained"  # the rule, and the positive control's
RULES = (VALUE, TRAINED)
DEFAULT_LEVEL = {VALUE: 0.0, TRAINED: 1.0}  # each rule's level at the default start
COLUMNS = {"rule": str, "level": float} | PHASE_COLUMNS


def _ascending(key: str, values: tuple[float, ...]) -> Iterator[Violation]:
    if len(values) < 2 or list(values) != sorted(set(values)):
        yield key, list(values), "at least two distinct levels, ascending"


@dataclass(frozen=True)
class InitErrorParams(Section):
    """LI-7: the phase diagram's ViT recipe from initial models of growing error at one alpha*
    (vitheory.li23.initial_error: the rule and its positive control)."""

    alpha_star: float = knob(Rule(lambda v: 0 < v <= 1, "in (0, 1]"))
    value_error: tuple[float, ...] = knob(NON_NEGATIVE)  # sigma: W_V^(0) = I + sigma R
    towards_trained: tuple[float, ...] = knob(FRACTION)  # the control's share of the way back to the default start
    reference_n_train: int = knob(at_least(2))  # the trained model's examples, none a cell's
    perturbation_seed: int = knob(NON_NEGATIVE)  # R of seed s is drawn from perturbation_seed + s
    n_train: tuple[int, ...] = knob(at_least(1))
    seeds: int = knob(at_least(1))

    def relations(self) -> Iterator[Violation]:
        yield from _ascending("value_error", self.value_error)
        yield from _ascending("towards_trained", self.towards_trained)


def relations(params: Any) -> Iterator[Violation]:
    """The sweep against the phase data it draws from: every cell's and the trained model's examples in the
    pool, none shared, and valid data at its alpha*, inside Theorem 1's premise."""
    sweep, data = params.init_error, params.phase.data
    needed = max(sweep.n_train) + sweep.reference_n_train
    if needed > data.pool_size:
        yield ("init_error.reference_n_train", sweep.reference_n_train,
               f"<= phase.data.pool_size ({data.pool_size}) - the largest init_error.n_train ({max(sweep.n_train)}): "
               "the trained model's examples follow every cell's in the pool")
    yield from sweep_alpha(data, "init_error.alpha_star", sweep.alpha_star)


def displace_value(seed: int, model: nn.Module, *, sigma: float, perturbation_seed: int) -> None:
    """W_V += sigma R, R random orthogonal from the seed's own generator: each pattern's value embedding
    moves exactly sigma from where the default start puts it."""
    generator = torch.Generator().manual_seed(perturbation_seed + seed)
    rotation = orthonormal_rows(model.W_V.shape[0], model.W_V.shape[0], generator)
    with torch.no_grad():
        model.W_V.add_(sigma * rotation)


def towards(seed: int, model: nn.Module, *, share: float, references: dict[int, dict[str, torch.Tensor]]) -> None:
    """Every trained weight at W* + share x (W - W*), W* the seed's trained model, W its default start."""
    with torch.no_grad():
        for name, weight in model.named_parameters():
            trained = references[seed][name]
            weight.copy_(trained + share * (weight - trained))


def value_displacement(model: nn.Module, default: nn.Module, patterns: torch.Tensor) -> float:
    """The largest distance over the patterns between a model's and the default start's value embedding:
    the realised sigma."""
    with torch.no_grad():
        return float(((patterns @ model.W_V.T) - (patterns @ default.W_V.T)).norm(dim=1).max())


def trained_references(cfg: InitErrorParams, phase: Any, device: torch.device
                       ) -> tuple[dict[int, dict[str, torch.Tensor]], list[float]]:
    """Each seed's ViT trained from its default start by the phase recipe on the `reference_n_train` pool
    examples past the sweep's largest N; its weights (on the CPU) and its test error on the cells' test set."""
    build = builder("vit", phase.vit.model, phase.data.dim)
    seeds = list(range(cfg.seeds))
    pools = [generate(cell_tokens(phase.data, cfg.alpha_star, phase.data.seed + s)) for s in seeds]
    first = max(cfg.n_train)
    train = Stacked.pad([(pool[0].X[first:first + cfg.reference_n_train], pool[0].y[first:first + cfg.reference_n_train])
                         for pool in pools]).to(device)
    test = Stacked.pad([(pool[1].X, pool[1].y) for pool in pools]).to(device)
    ensemble = Ensemble([seeded(s, build).to(device) for s in seeds])
    train_ensemble(ensemble, train, seeds, sgd_recipe(phase, "vit"), progress=False)
    _, error = loss_and_error(ensemble, test.X, test.y)
    return {s: {name: t.cpu() for name, t in ensemble.state(s).items()} for s in seeds}, error.tolist()


def _phase_setting(cfg: InitErrorParams, phase: Any) -> SimpleNamespace:
    """The phase trainer's settings with the sweep's one grid (the trainer reads these fields alone)."""
    grid = GridParams(alpha_star=(cfg.alpha_star,), n_train=cfg.n_train, seeds=cfg.seeds)
    return SimpleNamespace(data=phase.data, grids=SimpleNamespace(sweep=grid), steps=phase.steps,
                           batch_size=phase.batch_size, eval_every=phase.eval_every, vit=phase.vit)


def run_sweep(cfg: InitErrorParams, phase: Any, device: torch.device) -> tuple[list[dict], dict]:
    """Rows of `COLUMNS`, one per (rule, level, N, seed), the ViT's only, and the sweep's record: the trained
    models' test errors and each sigma's realised displacement per seed. `phase` holds params.yaml `phase`'s
    data, steps, batch_size, eval_every and vit."""
    references, reference_errors = trained_references(cfg, phase, device)
    starts: dict[tuple[str, float], Start | None] = {
        **{(VALUE, sigma): partial(displace_value, sigma=sigma, perturbation_seed=cfg.perturbation_seed)
           for sigma in cfg.value_error},
        **{(TRAINED, share): partial(towards, share=share, references=references) for share in cfg.towards_trained}}
    setting = _phase_setting(cfg, phase)
    trained: dict[Any, list[dict]] = {}
    rows = []
    for (rule, level), start in starts.items():
        default = level == DEFAULT_LEVEL[rule]  # the default start trains once, a row of both rules
        key = "default" if default else (rule, level)
        if key not in trained:
            trained[key] = run_grid(setting, "sweep", "vit", device, progress=False, start=None if default else start)
        rows += [{"rule": rule, "level": level} | row for row in trained[key]]
    return rows, {"reference": {"n_train": cfg.reference_n_train, "test_error": reference_errors},
                  "value_displacement": _displacements(cfg, phase)}


def _displacements(cfg: InitErrorParams, phase: Any) -> dict[str, list[float]]:
    """Each sigma's realised largest displacement of a pattern's value embedding, per seed: sigma, or the rule
    is not what it says."""
    build = builder("vit", phase.vit.model, phase.data.dim)
    out: dict[str, list[float]] = {}
    for sigma in cfg.value_error:
        out[f"{sigma:g}"] = []
        for seed in range(cfg.seeds):
            patterns = generate(cell_tokens(phase.data, cfg.alpha_star, phase.data.seed + seed))[1].patterns
            default, moved = seeded(seed, build), seeded(seed, build)
            displace_value(seed, moved, sigma=sigma, perturbation_seed=cfg.perturbation_seed)
            out[f"{sigma:g}"].append(value_displacement(moved, default, patterns))
    return out


# --- analysis -----------------------------------------------------------------------------------


def summarize(rows: list[dict], threshold: float) -> dict:
    """Per rule, each seed's N_min per level (-1: never reached in the grid): what the figure draws and
    verify re-derives from the runs."""
    out: dict[str, dict[str, list[int]]] = {}
    for rule in RULES:
        mine = [row for row in rows if row["rule"] == rule]
        per_seed = [unit.n_mins(threshold) for unit in seed_units(mine, partial(SeedRuns, column="level"))]
        out[rule] = {f"{level:g}": [-1 if seed[level] is None else seed[level] for seed in per_seed]
                     for level in sorted({row["level"] for row in mine})}
    return out
