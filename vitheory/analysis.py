"""Analyses of trained models that the claims read."""

from __future__ import annotations

import torch

from vitheory.li_tokens import KIND_NAMES, RELEVANT
from vitheory.params import LiTokensParams


def attention_masses(attn: torch.Tensor, kind: torch.Tensor) -> dict[str, float]:
    """Mean attention mass on label-relevant keys, by kind of query ([LI23] claim LI-3).

    Args:
        attn: (N, L_query, L_key) attention probabilities.
        kind: (N, L) token kinds (vitheory.li_tokens).

    Returns `attn_<kind>_query` for each kind of query present (the mean over those queries of
    the mass they put on label-relevant tokens) and `attn_all_query`, the mean over every query.
    """
    on_relevant = (attn * (kind == RELEVANT).to(attn.dtype)[:, None, :]).sum(dim=-1)  # (N, L_query)
    masses = {"attn_all_query": on_relevant.mean().item()}
    for code, name in KIND_NAMES.items():
        selected = kind == code
        if selected.any():
            masses[f"attn_{name}_query"] = on_relevant[selected].mean().item()
    return masses


def reference_masses(cfg: LiTokensParams) -> dict[str, float]:
    """What the masses are compared with: their value under uniform attention, and the cap on the
    all-query mean. A label-irrelevant query cannot tell the class, so at best it splits its mass
    between both classes' tokens, capping the all-query mean near alpha* / (alpha* + alpha#).
    """
    return {"uniform": cfg.n_relevant / cfg.n_tokens,
            "all_query_cap": cfg.n_relevant / (cfg.n_relevant + cfg.n_confusion)}
