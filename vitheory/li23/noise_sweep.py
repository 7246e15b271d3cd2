"""[LI23] LI-6: the phase diagram's ViT (vitheory.li23.phase) over token noise radii tau at one alpha*.

Every radius is one grid of N x seeds at the sweep's alpha*, trained by the phase trainer with the phase
recipe (phase.data but its noise radius, phase.steps, batch size, check interval and ViT), so that a
cell of this sweep at phase.data.noise_radius is the same run as the phase diagram's cell.
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import torch

from vitheory.li23.params import GridParams, NoiseSweepParams
from vitheory.li23.phase import COLUMNS as PHASE_COLUMNS, run_grid

COLUMNS = {"noise_radius": float} | PHASE_COLUMNS


def run_sweep(cfg: NoiseSweepParams, phase: Any, device: torch.device) -> list[dict]:
    """Rows of `COLUMNS`, one per (tau, N, seed), the ViT's only. `phase` holds params.yaml `phase`'s
    data, steps, batch_size, eval_every and vit."""
    grid = GridParams(alpha_star=(cfg.alpha_star,), n_train=cfg.n_train, seeds=cfg.seeds)
    rows = []
    for radius in cfg.noise_radius:
        # the phase trainer reads these fields alone
        setting = SimpleNamespace(data=replace(phase.data, noise_radius=radius), grids=SimpleNamespace(sweep=grid),
                                  steps=phase.steps, batch_size=phase.batch_size, eval_every=phase.eval_every,
                                  vit=phase.vit)
        rows += [{"noise_radius": radius} | row for row in run_grid(setting, "sweep", "vit", device)]
    return rows
