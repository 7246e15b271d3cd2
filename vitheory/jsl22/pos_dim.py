"""[JSL22] the positional-attention ViT of the spatial recipe over positional widths d_p, described beside JSL-2
(vitheory.jsl22.claims): not a claim of the paper, which states no dependence on d_p.

docs/JSL22.md's prototypes: the diagonal |p_i|^2 of P P^T, which lets each patch attend a little to
itself and so to its own set, stands out of the off-diagonal noise by sqrt(d_p); at D = 64 patches,
d_p = 16 left association at 0-0.39 and d_p = 128 reached 0.89-1.0.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from vitheory.core.device import seeded
from vitheory.core.ensemble import Stability, train_stable
from vitheory.jsl22.params import PosDimSweepParams
from vitheory.jsl22.training import attention_association, patch_builder, positional_recipe, stable, stack, test_metrics

COLUMNS = {"pos_dim": int, "seed": int, "unstable": int, "halvings": int, "error_rate": float, "attn_exact": float,
           "attn_overlap": float, "pos_exact": float}


def sweep(cfg: PosDimSweepParams, recipe: Any, stability: Stability, train, test, sets: torch.Tensor,
          device: torch.device) -> list[dict]:
    """One row per (d_p, seed): the ViT of `recipe` (params.yaml `spatial`: its vit, steps, rates) with
    positional width d_p, every seed of one width trained as one ensemble, each from the initialisation its
    seed draws, under the stability rule: a seed whose loss diverges (at d_p = 32, lr 50 on P diverged 4 seeds
    in six) trains again at half the rates and twice the steps, and one unstable at every rate tried is a row
    with unstable = 1, left out of the width's means, whose share of unstable seeds the report shows."""
    rows = []
    X_test, y_test = test[0].to(device), test[1].to(device)
    for pos_dim in cfg.pos_dims:
        build = patch_builder(replace(recipe.vit, pos_dim=pos_dim), train[0].shape[1], train[0].shape[2])
        ensemble, outcome = train_stable(lambda seed: seeded(seed, build).to(device), stack(*train, cfg.seeds, device),
                                         range(cfg.seeds), stable(positional_recipe(recipe), stability),
                                         desc=f"positional ViT (d_p = {pos_dim})")
        metrics = test_metrics(ensemble, X_test, y_test)
        association = attention_association(ensemble, X_test[0], sets)
        rows += [{"pos_dim": pos_dim, "seed": seed, "unstable": int(outcome.unstable[seed]),
                  "halvings": outcome.halvings[seed], "error_rate": metrics[seed]["error_rate"]} | association[seed]
                 for seed in range(cfg.seeds)]
    return rows
