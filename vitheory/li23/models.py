"""[LI23] models: the shallow ViT of the theory and the CNN it is compared with (docs/SCIENCE.md section 1)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class ShallowViT(nn.Module):
    """[LI23] shallow ViT: one single-head softmax self-attention layer and a two-layer perceptron.

        F(X) = (1/L) sum_l a^T ReLU(W_O sum_s W_V x_s attn(l, s)),
        attn(l, s) = softmax_s((W_K x_s)^T (W_Q x_l)).

    The scores carry no 1/sqrt(d) factor: the scale lives in the initialisation,
    W_Q = W_K = qk_init * I, so a token's score with a same-pattern token starts at about
    qk_init^2 and attention starts near uniform. W_V = I and W_O ~ N(0, out_init_std^2). The
    readout a is fixed (a buffer, not trained) at +1/m for the first m/2 hidden units and -1/m
    for the rest.

    Args:
        dim: token dimension d.
        width: hidden units m.
        qk_init: scale of the identity that W_Q and W_K start from.
        out_init_std: standard deviation of W_O's initial entries.
    """

    def __init__(self, *, dim: int, width: int, qk_init: float, out_init_std: float):
        super().__init__()
        self.config = {"dim": dim, "width": width, "qk_init": qk_init, "out_init_std": out_init_std}
        self.W_Q = nn.Parameter(qk_init * torch.eye(dim))
        self.W_K = nn.Parameter(qk_init * torch.eye(dim))
        self.W_V = nn.Parameter(torch.eye(dim))
        self.W_O = nn.Parameter(out_init_std * torch.randn(width, dim))
        sign = torch.where(torch.arange(width) < width // 2, 1.0, -1.0)
        self.register_buffer("a", sign / width)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, d) tokens -> (B, L_query, L_key) attention probabilities."""
        scores = torch.einsum("bsd,bld->bls", x @ self.W_K.T, x @ self.W_Q.T)
        return scores.softmax(dim=-1)

    def forward(self, x: torch.Tensor, *, return_attention: bool = False):
        """(B, L, d) tokens -> (B,) outputs F(X); with `return_attention`, also the attention map."""
        attn = self.attention(x)
        mixed = torch.einsum("bls,bsd->bld", attn, x @ self.W_V.T)  # sum_s W_V x_s attn(l, s)
        hidden = F.relu(mixed @ self.W_O.T)  # (B, L, m)
        out = (hidden @ self.a).mean(dim=1)
        return (out, attn) if return_attention else out

    def param_group(self, name: str) -> str:
        """Which learning rate a parameter takes: `mixing` (W_Q, W_K: the attention) or `mlp` (W_V, W_O)."""
        return "mixing" if name in ("W_Q", "W_K") else "mlp"


class TokenCNN(nn.Module):
    """The [LI23] comparison CNN: the ViT with its attention replaced by a 1-D convolution over the
    token sequence (docs/SCIENCE.md section 1, our default construction).

        F(X) = (1/L) sum_l a^T ReLU(W_O sum_{|j| <= k/2} W_conv[j] x_{l+j}),

    zero-padded at both ends, global average pooling over positions, the same fixed readout a and
    hinge loss as ShallowViT. Where attention can weigh any token by content, a convolution mixes a
    fixed window of k neighbours, whatever they carry.

    Args:
        dim: token dimension d.
        width: hidden units m.
        kernel: odd window size k.
        conv_init_std: standard deviation of W_conv's entries is conv_init_std / sqrt(k).
        out_init_std: standard deviation of W_O's initial entries.
    """

    def __init__(self, *, dim: int, width: int, kernel: int, conv_init_std: float, out_init_std: float):
        super().__init__()
        if kernel % 2 == 0:
            raise ValueError(f"kernel must be odd, got {kernel}")
        self.config = {"dim": dim, "width": width, "kernel": kernel, "conv_init_std": conv_init_std,
                       "out_init_std": out_init_std}
        self.W_conv = nn.Parameter(conv_init_std / kernel ** 0.5 * torch.randn(dim, dim, kernel))
        self.W_O = nn.Parameter(out_init_std * torch.randn(width, dim))
        sign = torch.where(torch.arange(width) < width // 2, 1.0, -1.0)
        self.register_buffer("a", sign / width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, d) tokens -> (B,) outputs."""
        half = self.W_conv.shape[-1] // 2
        windows = F.pad(x, (0, 0, half, half)).unfold(1, 2 * half + 1, 1)  # (B, L, d, k): x_{l-k/2..l+k/2}
        mixed = torch.einsum("bldk,edk->ble", windows, self.W_conv)  # a 1-D convolution, as one matmul
        hidden = F.relu(mixed @ self.W_O.T)  # (B, L, m)
        return (hidden @ self.a).mean(dim=1)

    def param_group(self, name: str) -> str:
        """`mixing` (W_conv) or `mlp` (W_O)."""
        return "mixing" if name == "W_conv" else "mlp"


MODELS = {"vit": ShallowViT, "cnn": TokenCNN}


def builder(model: str, spec: Any, dim: int) -> Callable[[], nn.Module]:
    """A constructor of `MODELS[model]` for tokens of dimension dim, from the params section whose fields
    are its keywords (ShallowViTParams, TokenCNNParams)."""
    return lambda: MODELS[model](dim=dim, **asdict(spec))
