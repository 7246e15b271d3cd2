"""Cosine similarity of positional encodings: [JSL22]'s synthetic ViTs and the real-image ViTs both
compare theirs this way, so it lives below the papers and the shared images layer."""

from __future__ import annotations

import numpy as np
import torch


def cosine_similarity(P: torch.Tensor) -> np.ndarray:
    """(D, D) cosine similarity of the rows of P (positional encodings), as the figures draw it."""
    unit = P.detach() / P.detach().norm(dim=1, keepdim=True)
    return (unit @ unit.T).numpy()
