"""0-1 mistakes that count a non-finite output as wrong: every error rate and accuracy goes through here.

A comparison with NaN is false, so `out * y <= 0` takes a NaN output for a correct one, and a diverged
model scores as well as a trained one (at d_p = 32 three of six diverged seeds once kept errors of
0.2-3%). An infinite output is no prediction either: it is the overflow of a diverging model.
"""

from __future__ import annotations

import torch


def sign_mistakes(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per example, whether a real output misclassifies its +-1 label: its sign is not y's (0 counts as
    wrong), or the output is not finite. Same shape as `out * y`."""
    return (out * y <= 0) | ~torch.isfinite(out)


def sign_error_rate(out: torch.Tensor, y: torch.Tensor) -> float:
    """The share of examples `sign_mistakes` counts wrong."""
    return sign_mistakes(out, y).float().mean().item()


def class_mistakes(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per example, whether the argmax of its logits (..., classes) is not the class y, or any of its logits
    is not finite (a NaN row's argmax is whatever index the kernel returns)."""
    return (logits.argmax(-1) != y) | ~torch.isfinite(logits).all(-1)
