"""[JSL22] models: the one-layer ViT with positional attention (Definition 3.2), the vanilla one
(Definition 3.1) and Theorem 3.1's generalized linear model."""

from __future__ import annotations

import torch
from torch import nn


def cubic(z: torch.Tensor) -> torch.Tensor:
    return z ** 3


class PositionalViT(nn.Module):
    """[JSL22] one-layer ViT with positional attention (the paper's Definition 3.2): the scores depend
    on learnable positional encodings P (D, d_p) only; the input enters through the values alone.

        S = row-softmax(scores(P)),  M(X) = sum_i sigma(<v, sum_j S_ij X_j>),  sigma(z) = z^3.

    `score_form` chooses scores(P): `ppt` = P P^T / sqrt(d_p) (P is the only attention parameter, so
    what attention learns is read off P P^T), `qk` = (P W_Q)(P W_K)^T / sqrt(d_p) (the paper's form,
    W_Q and W_K start at the identity), or `free` (a D x D score matrix learned directly; P is kept,
    a buffer, so that every form's checkpoint holds one).

    Args:
        n_patches: D. dim: d. pos_dim: d_p.
        score_form: `ppt`, `qk` or `free`.
        pos_init_std: standard deviation of P's entries (of W_Q - I and W_K - I: that over sqrt(d_p)).
        readout_init_std: standard deviation of v's entries.
    """

    def __init__(self, *, n_patches: int, dim: int, pos_dim: int, score_form: str, pos_init_std: float,
                 readout_init_std: float):
        super().__init__()
        if score_form not in ("ppt", "qk", "free"):
            raise ValueError(f"score_form must be ppt, qk or free, got {score_form!r}")
        self.config = {"n_patches": n_patches, "dim": dim, "pos_dim": pos_dim, "score_form": score_form,
                       "pos_init_std": pos_init_std, "readout_init_std": readout_init_std}
        P = pos_init_std * torch.randn(n_patches, pos_dim)
        if score_form == "free":
            self.register_buffer("P", P)  # untrained; the scores start where P P^T / sqrt(d_p) does
            self.scores = nn.Parameter(P @ P.T * pos_dim ** -0.5)
        else:
            self.P = nn.Parameter(P)
        if score_form == "qk":  # near the identity: P W_Q and P W_K start close to P
            noise = pos_init_std / pos_dim ** 0.5
            self.W_Q = nn.Parameter(torch.eye(pos_dim) + noise * torch.randn(pos_dim, pos_dim))
            self.W_K = nn.Parameter(torch.eye(pos_dim) + noise * torch.randn(pos_dim, pos_dim))
        self.v = nn.Parameter(readout_init_std * torch.randn(dim))

    def attention(self) -> torch.Tensor:
        """(D, D) attention probabilities, the same for every input."""
        form = self.config["score_form"]
        if form == "free":
            return self.scores.softmax(dim=-1)
        query, key = (self.P @ self.W_Q, self.P @ self.W_K) if form == "qk" else (self.P, self.P)
        return (query @ key.T * self.P.shape[1] ** -0.5).softmax(dim=-1)

    def forward(self, x: torch.Tensor, *, return_attention: bool = False):
        """(B, D, d) patches -> (B,) outputs; with `return_attention`, also the (D, D) map."""
        attn = self.attention()
        # <v, sum_j S_ij X_j> = sum_j S_ij <v, X_j>: project first, d times fewer operations
        out = cubic((x @ self.v) @ attn.T).sum(dim=1)
        return (out, attn) if return_attention else out

    def param_group(self, name: str) -> str:
        """`mixing` (P, W_Q, W_K, free scores) or `readout` (v)."""
        return "readout" if name == "v" else "mixing"


class MultiHeadViT(nn.Module):
    """[JSL22] one-layer ViT with H attention heads and a readout of m cubic units. Each head's scores
    come from the patches plus positional encodings (`scores="tokens"`, the vanilla self-attention of
    the paper's Definition 3.1) or from the positional encodings alone (`scores="positions"`); values
    come from the patches, through the head's own value map:

        Z = X + P (tokens) or Z = P (positions),  S_h = row-softmax((Z W_Q^h)(Z W_K^h)^T / sqrt(d)),
        M(X) = (1/m) sum_i sum_r a_r sigma(sum_h <V^h_r, sum_j S^h_ij X_j>).

    One head applies one value map to every patch it mixes; with H >= C heads the model can represent
    a CNN over sets of C patches whose filter differs by position in the set (head h gathers the h-th
    patch of each set, V^h holds that position's filter).

    Args:
        n_patches: D. dim: d. width: m hidden units. heads: H. scores: `tokens` or `positions`.
        pos_init_std: standard deviation of P's entries; each W_Q^h and W_K^h starts at the identity
            plus noise of this scale.
        readout_init_std: standard deviation of the entries of V (a starts at N(0, 1)).
    """

    def __init__(self, *, n_patches: int, dim: int, width: int, heads: int, scores: str, pos_init_std: float,
                 readout_init_std: float):
        super().__init__()
        self.config = {"n_patches": n_patches, "dim": dim, "width": width, "heads": heads, "scores": scores,
                       "pos_init_std": pos_init_std, "readout_init_std": readout_init_std}
        self.scores = scores
        self.P = nn.Parameter(pos_init_std * torch.randn(n_patches, dim))
        self.W_Q = nn.Parameter(torch.eye(dim) + pos_init_std * torch.randn(heads, dim, dim))
        self.W_K = nn.Parameter(torch.eye(dim) + pos_init_std * torch.randn(heads, dim, dim))
        self.V = nn.Parameter(readout_init_std * torch.randn(heads, width, dim))
        self.a = nn.Parameter(torch.randn(width))

    def forward(self, x: torch.Tensor, *, return_attention: bool = False):
        """(B, D, d) patches -> (B,) outputs; with `return_attention`, also the maps averaged over heads,
        (B, D, D) from tokens, (D, D) from positions."""
        batch, n_patches, _ = x.shape
        z = (x + self.P).unsqueeze(1) if self.scores == "tokens" else self.P  # (B, 1, D, d) or (D, d)
        attn = ((z @ self.W_Q) @ (z @ self.W_K).transpose(-1, -2) * x.shape[-1] ** -0.5).softmax(dim=-1)
        # mixed (B, D, m): sum_h sum_j S^h_ij <V^h_r, X_j>
        if self.scores == "tokens":
            mixed = (attn @ torch.einsum("bjd,hmd->bhjm", x, self.V)).sum(dim=1)
        else:  # one map for every input: folded into the values, one matrix product (10x faster here)
            kernel = torch.einsum("hij,hmd->jdim", attn, self.V).reshape(-1, n_patches * self.V.shape[1])
            mixed = (x.reshape(batch, -1) @ kernel).reshape(batch, n_patches, -1)
        out = (cubic(mixed) @ self.a).sum(dim=1) / self.V.shape[1]
        return (out, attn.mean(dim=-3)) if return_attention else out

    def param_group(self, name: str) -> str:
        """`mixing` (P, W_Q, W_K) or `readout` (V, a)."""
        return "mixing" if name in ("P", "W_Q", "W_K") else "readout"


class PatchGLM(nn.Module):
    """[JSL22] Theorem 3.1's generalized linear model g(X) = phi(sum_j <w_j, X_j>): one weight vector per
    patch; phi is the logistic link of the loss.

    Args:
        n_patches: D. dim: d. init_std: standard deviation of the initial weights.
    """

    def __init__(self, *, n_patches: int, dim: int, init_std: float):
        super().__init__()
        self.config = {"n_patches": n_patches, "dim": dim, "init_std": init_std}
        self.W = nn.Parameter(init_std * torch.randn(n_patches, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(1) @ self.W.flatten()

    def param_group(self, name: str) -> str:
        return "readout"
