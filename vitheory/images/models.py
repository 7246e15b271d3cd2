"""Small image classifiers shared by the real-image claims: a ViT with vanilla or positional attention,
and a ResNet-style CNN. ([PK22]'s AlterNet, built from these blocks, is in vitheory.pk22.models.)

Both take normalised images (B, C, H, W) and return logits. With `return_features=True` they also
return what the analyses read ([PK22]'s Fourier and variance per block, the attention maps):
`features` is a list of (kind, tensor): the embedded input ("embed") and the output of every residual
block ("msa", "mlp" or "conv"), each (B, tokens or H*W, channels), class token dropped, tokens in
row-major grid order; `attention` is a list of per-layer maps (B, heads, T, T).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from vitheory.core.config import Section
from vitheory.images.params import ResNetPreset, ViTPreset


def patchify(images: torch.Tensor, patch: int) -> torch.Tensor:
    """(B, C, H, W) -> (B, (H/p)(W/p), p*p*C) patches in row-major grid order."""
    b, c, h, w = images.shape
    x = images.reshape(b, c, h // patch, patch, w // patch, patch)
    return x.permute(0, 2, 4, 3, 5, 1).reshape(b, (h // patch) * (w // patch), patch * patch * c)


class Attention(nn.Module):
    """Multi-head self-attention. `vanilla`: scores from the tokens; `positional` ([JSL22] Definition
    3.2): scores from the positional encodings alone, the same for every image, values from the tokens."""

    def __init__(self, width: int, heads: int, kind: str):
        super().__init__()
        self.heads, self.kind = heads, kind
        self.qk = nn.Linear(width, 2 * width)
        self.v = nn.Linear(width, width)
        self.out = nn.Linear(width, width)

    def forward(self, x: torch.Tensor, pos: torch.Tensor, mask: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, T, w); pos (B or 1, T, w), the encodings of x's tokens; mask (T, T), where given, True where
        a token (row) may attend to another (column) -> output and maps (B, heads, T, T)."""
        b, t, w = x.shape
        head_dim = w // self.heads
        source = x if self.kind == "vanilla" else pos
        q, k = self.qk(source).reshape(source.shape[0], t, 2, self.heads, head_dim).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(head_dim)
        if mask is not None:
            scores = scores.masked_fill(~mask, -math.inf)
        attn = scores.softmax(dim=-1)
        v = self.v(x).reshape(b, t, self.heads, head_dim).transpose(1, 2)
        mixed = (attn @ v).transpose(1, 2).reshape(b, t, w)
        return self.out(mixed), attn.expand(b, -1, -1, -1)


class Block(nn.Module):
    """A pre-norm transformer block: multi-head attention, then an MLP, each on a residual branch."""

    def __init__(self, width: int, heads: int, mlp_ratio: int, kind: str):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = Attention(width, heads, kind)
        self.mlp = nn.Sequential(nn.Linear(width, mlp_ratio * width), nn.GELU(), nn.Linear(mlp_ratio * width, width))

    def forward(self, x: torch.Tensor, pos: torch.Tensor, *, embed: torch.Tensor | None = None,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (B, T, w) the residual stream; pos the encodings positional attention scores read; `embed`,
        when given, is added to x at the attention's input only; `mask` restricts the attention (Attention).
        -> the stream after attention, after the MLP, and the attention maps (B, heads, T, T)."""
        mixed, attn = self.attn(self.norm1(x if embed is None else x + embed), pos, mask)
        x = x + mixed
        return x, x + self.mlp(self.norm2(x)), attn


class SmallViT(nn.Module):
    """A pre-norm ViT: patch embedding, learned positional encodings P, `depth` blocks of multi-head
    attention and MLP, class-token (`cls`) or global-average (`gap`) pooling.

    With `attention="positional"` every block's scores come from P (projected per block) and P is not
    added to the tokens: the image enters through the values only, as in [JSL22]. With `vanilla`, P is
    added to the patch embeddings, as usual.

    With `window` k > 0 ([PK22]'s local MSAs), a patch token attends only to the patch tokens of the k x k
    window centred on it on the grid of patches (cut at the grid's edges) and to the class token, which
    attends to every token; 0 is global attention.

    Args:
        image_size, channels, n_classes: the data's. patch: side of a square patch.
        depth, heads, width, mlp_ratio: the transformer's. attention: `vanilla` or `positional`.
        pool: `cls` or `gap`. window: 0 (global) or an odd side of the attention window, in patches.
    """

    KIND: ClassVar[str] = "vit"  # its switch in real.compile_by_kind

    def __init__(self, *, image_size: int, channels: int, n_classes: int, patch: int, depth: int, heads: int,
                 width: int, mlp_ratio: int, attention: str, pool: str, window: int = 0):
        super().__init__()
        if attention not in ("vanilla", "positional") or pool not in ("cls", "gap"):
            raise ValueError(f"attention must be vanilla or positional and pool cls or gap, got {attention}, {pool}")
        if image_size % patch or width % heads:
            raise ValueError(f"patch {patch} must divide image_size {image_size}, heads {heads} width {width}")
        if window < 0 or window and window % 2 == 0:
            raise ValueError(f"window must be 0 (global) or an odd side in patches, got {window}")
        # a global model's config has no window: checkpoints written before the option load as they are
        self.config = {"image_size": image_size, "channels": channels, "n_classes": n_classes, "patch": patch,
                       "depth": depth, "heads": heads, "width": width, "mlp_ratio": mlp_ratio,
                       "attention": attention, "pool": pool} | ({"window": window} if window else {})
        self.patch, self.attention, self.pool, self.window = patch, attention, pool, window
        # where each patch sits on the grid the windows are laid on, row-major (None); a permutation moves them
        # off their neighbours (PK-12's control, vitheory.pk22.locality)
        self.window_order: torch.Tensor | None = None
        self.n_patches = (image_size // patch) ** 2
        extra = 1 if pool == "cls" else 0
        self.embed = nn.Linear(patch * patch * channels, width)
        self.P = nn.Parameter(0.02 * torch.randn(self.n_patches + extra, width))
        if pool == "cls":
            self.cls = nn.Parameter(torch.zeros(1, 1, width))
        self.blocks = nn.ModuleList(Block(width, heads, mlp_ratio, attention) for _ in range(depth))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, n_classes)

    def forward(self, images: torch.Tensor, *, keep: torch.Tensor | None = None, return_features: bool = False):
        """`keep` (B, k): the patch indices each image keeps (token sparsification); None keeps all."""
        if keep is not None and self.window:
            raise ValueError("a windowed ViT keeps every token: its windows are laid on the whole grid")
        tokens = self.embed(patchify(images, self.patch))
        b = tokens.shape[0]
        pos = self.P[-self.n_patches:].expand(b, -1, -1)
        if keep is not None:
            index = keep[..., None].expand(-1, -1, tokens.shape[-1])
            tokens, pos = tokens.gather(1, index), pos.gather(1, index)
        if self.pool == "cls":
            tokens = torch.cat([self.cls.expand(b, -1, -1), tokens], dim=1)
            pos = torch.cat([self.P[:1].expand(b, -1, -1), pos], dim=1)
        x = tokens + pos if self.attention == "vanilla" else tokens
        first = 1 if self.pool == "cls" else 0
        score_pos = pos[:1] if keep is None else pos  # without sparsification every image shares P
        mask = window_mask(math.isqrt(self.n_patches), self.window, first, self.window_order).to(x.device) \
            if self.window else None
        features, maps = [("embed", x[:, first:])], []
        for block in self.blocks:
            after_attention, x, attn = block(x, score_pos, mask=mask)
            features += [("msa", after_attention[:, first:]), ("mlp", x[:, first:])]
            maps.append(attn)
        x = self.norm(x)
        logits = self.head(x[:, 0] if self.pool == "cls" else x.mean(dim=1))
        return (logits, {"features": features, "attention": maps}) if return_features else logits


def window_mask(side: int, window: int, extra: int, order: torch.Tensor | None = None) -> torch.Tensor:
    """(T, T) bool, T = extra + side^2: True where a token (row) may attend to another (column). Patch
    tokens (row-major on a side x side grid, after `extra` leading tokens, the class token) attend to the
    patches within the window x window square centred on them, cut at the grid's edges; the leading tokens
    attend to, and are attended by, every token. `order[i]`: the grid cell patch i's window is laid on
    (None: its own)."""
    cell = torch.arange(side * side) if order is None else order
    row, column = cell // side, cell % side
    reach = window // 2
    near = ((row[:, None] - row[None, :]).abs() <= reach) & ((column[:, None] - column[None, :]).abs() <= reach)
    mask = torch.ones(extra + side * side, extra + side * side, dtype=torch.bool)
    mask[extra:, extra:] = near
    return mask


def as_tokens(x: torch.Tensor) -> torch.Tensor:
    """(B, C, H, W) feature map -> (B, H*W, C) tokens in row-major order."""
    return x.flatten(2).transpose(1, 2)


def conv_stem(channels: int, width: int) -> nn.Sequential:
    """3x3 convolution, batch norm, ReLU: the input layer of the CNNs."""
    return nn.Sequential(nn.Conv2d(channels, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())


class ResidualBlock(nn.Module):
    """conv-BN-ReLU-conv-BN plus a (projected when the shape changes) skip, then ReLU."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.skip = nn.Identity() if stride == 1 and c_in == c_out else nn.Sequential(
            nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(out + self.skip(x))


class SmallResNet(nn.Module):
    """A ResNet-style CNN: a 3x3 stem, stages of residual blocks (the first block of every stage after
    the first halves the resolution), global average pooling, a linear head.

    Args:
        channels, n_classes: the data's. widths: channels per stage. blocks: residual blocks per stage.
    """

    KIND: ClassVar[str] = "cnn"  # its switch in real.compile_by_kind

    def __init__(self, *, channels: int, n_classes: int, widths: Sequence[int], blocks: Sequence[int]):
        super().__init__()
        if len(widths) != len(blocks):
            raise ValueError(f"one block count per stage: widths {widths}, blocks {blocks}")
        self.config = {"channels": channels, "n_classes": n_classes, "widths": list(widths), "blocks": list(blocks)}
        self.stem = conv_stem(channels, widths[0])
        self.layers, c_in = residual_stages(widths, blocks)
        self.head = nn.Linear(c_in, n_classes)

    def forward(self, images: torch.Tensor, *, return_features: bool = False):
        """(B, C, H, W) images -> logits; with `return_features`, also each block's output as tokens,
        labelled `conv`, or `msa` and `mlp` for a block that returns (after attention, map) as
        AlterNet's attention blocks do."""
        x = self.stem(images)
        features = [("embed", as_tokens(x))]
        for layer in self.layers:
            out = layer(x)
            if isinstance(out, tuple):
                after_attention, x = out
                features += [("msa", after_attention), ("mlp", as_tokens(x))]
            else:
                x = out
                features.append(("conv", as_tokens(x)))
        logits = self.head(x.mean(dim=(2, 3)))
        return (logits, {"features": features, "attention": []}) if return_features else logits


# the class each preset section builds (vitheory.images.params.REAL_MODELS names the models that use them)
ARCHITECTURES: dict[type[Section], type[nn.Module]] = {
    ViTPreset: SmallViT,
    ResNetPreset: SmallResNet,
}


def residual_stages(widths: Sequence[int], blocks: Sequence[int], attention: Collection[int] = (), image_size: int = 0,
                    attention_block: Callable[[int, int], nn.Module] | None = None) -> tuple[nn.ModuleList, int]:
    """Stages of residual conv blocks, the first block of every stage after the first halving the
    resolution; the blocks numbered in `attention` (over the whole network, from 0) are
    attention_block(width, positions) instead (positions of the stage's map, from `image_size`).
    -> (layers, output channels)."""
    layers, c_in, side = [], widths[0], image_size
    for stage, (width, count) in enumerate(zip(widths, blocks)):
        for i in range(count):
            if len(layers) in attention:
                layers.append(attention_block(width, side * side))
                continue
            stride = 2 if stage > 0 and i == 0 else 1
            layers.append(ResidualBlock(c_in, width, stride))
            side, c_in = side // stride, width
    return nn.ModuleList(layers), c_in
