"""Models of the theory papers. Each is registered so that `vitheory.load_checkpoint` rebuilds it."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from vitheory.params import (
    GLMParams,
    PositionalViTParams,
    ShallowViTParams,
    TokenCNNParams,
    VanillaViTParams,
)

MODEL_CLASSES: dict[str, type[nn.Module]] = {}


def register_model(cls: type[nn.Module]) -> type[nn.Module]:
    """Make a model class loadable by `vitheory.load_checkpoint`: its `config` dict rebuilds it."""
    MODEL_CLASSES[cls.__name__] = cls
    return cls


@register_model
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


@register_model
class TokenCNN(nn.Module):
    """The [LI23] comparison CNN: the ViT with its attention replaced by a 1-D convolution over the
    token sequence (SCIENCE.md section 1, our default construction).

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


def cubic(z: torch.Tensor) -> torch.Tensor:
    return z ** 3


@register_model
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


@register_model
class VanillaViT(nn.Module):
    """[JSL22] one-layer ViT with vanilla self-attention (the paper's Definition 3.1): scores from the
    patches plus positional encodings, values from the patches, a readout of m cubic units.

        Z = X + P,  S = row-softmax((Z W_Q)(Z W_K)^T / sqrt(d)),
        M(X) = (1/m) sum_i sum_r a_r sigma(<V_r, sum_j S_ij X_j>).

    Args:
        n_patches: D. dim: d. width: m hidden units.
        pos_init_std: standard deviation of P's entries; W_Q and W_K start at the identity plus
            noise of this scale.
        readout_init_std: standard deviation of V's entries (a starts at N(0, 1)).
    """

    def __init__(self, *, n_patches: int, dim: int, width: int, pos_init_std: float, readout_init_std: float):
        super().__init__()
        self.config = {"n_patches": n_patches, "dim": dim, "width": width, "pos_init_std": pos_init_std,
                       "readout_init_std": readout_init_std}
        self.P = nn.Parameter(pos_init_std * torch.randn(n_patches, dim))
        self.W_Q = nn.Parameter(torch.eye(dim) + pos_init_std * torch.randn(dim, dim))
        self.W_K = nn.Parameter(torch.eye(dim) + pos_init_std * torch.randn(dim, dim))
        self.V = nn.Parameter(readout_init_std * torch.randn(width, dim))
        self.a = nn.Parameter(torch.randn(width))

    def forward(self, x: torch.Tensor, *, return_attention: bool = False):
        """(B, D, d) patches -> (B,) outputs; with `return_attention`, also the (B, D, D) maps."""
        z = x + self.P
        attn = ((z @ self.W_Q) @ (z @ self.W_K).transpose(1, 2) * x.shape[-1] ** -0.5).softmax(dim=-1)
        hidden = cubic(attn @ (x @ self.V.T))  # (B, D, m): sigma(<V_r, sum_j S_ij X_j>)
        out = (hidden @ self.a).sum(dim=1) / self.V.shape[0]
        return (out, attn) if return_attention else out

    def param_group(self, name: str) -> str:
        """`mixing` (P, W_Q, W_K) or `readout` (V, a)."""
        return "mixing" if name in ("P", "W_Q", "W_K") else "readout"


@register_model
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
        return x.flatten(1) @ self.W.flatten()  # one matrix-vector product

    def param_group(self, name: str) -> str:
        return "readout"


def builder(spec: ShallowViTParams | TokenCNNParams, dim: int) -> Callable[[], nn.Module]:
    """A constructor of the model that a params section describes, for tokens of dimension dim."""
    if isinstance(spec, ShallowViTParams):
        return lambda: ShallowViT(dim=dim, width=spec.width, qk_init=spec.qk_init, out_init_std=spec.out_init_std)
    return lambda: TokenCNN(dim=dim, width=spec.width, kernel=spec.kernel, conv_init_std=spec.conv_init_std,
                            out_init_std=spec.out_init_std)


def patch_builder(spec: PositionalViTParams | VanillaViTParams | GLMParams, n_patches: int,
                  dim: int) -> Callable[[], nn.Module]:
    """A constructor of the [JSL22] model that a params section describes, for D patches in R^d."""
    if isinstance(spec, PositionalViTParams):
        return lambda: PositionalViT(n_patches=n_patches, dim=dim, pos_dim=spec.pos_dim, score_form=spec.score_form,
                                     pos_init_std=spec.pos_init_std, readout_init_std=spec.readout_init_std)
    if isinstance(spec, VanillaViTParams):
        return lambda: VanillaViT(n_patches=n_patches, dim=dim, width=spec.width, pos_init_std=spec.pos_init_std,
                                  readout_init_std=spec.readout_init_std)
    return lambda: PatchGLM(n_patches=n_patches, dim=dim, init_std=spec.init_std)
