"""[PK22] models: AlterNet, SmallResNet's stages with attention blocks at the ends of stages.
Registered so that `vitheory.load_checkpoint` rebuilds it."""

from __future__ import annotations

import torch
from torch import nn

from vitheory.core.checkpoint import register_model
from vitheory.images.models import Block, ResidualBlock, as_tokens, conv_stem


class MapAttention(nn.Module):
    """A pre-norm transformer block (multi-head self-attention, then an MLP) over the positions of a
    (B, C, H, W) feature map, with a learned positional encoding added to the attention's input."""

    def __init__(self, width: int, heads: int, positions: int):
        super().__init__()
        self.P = nn.Parameter(0.02 * torch.randn(1, positions, width))
        self.block = Block(width, heads, 2, "vanilla")

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """-> the tokens after attention (B, H*W, C) and the map after the MLP (B, C, H, W)."""
        after_attention, tokens, _ = self.block(as_tokens(x), self.P, embed=self.P)
        return after_attention, tokens.transpose(1, 2).reshape(x.shape)


@register_model
class AlterNet(nn.Module):
    """[PK22]'s AlterNet at small scale: SmallResNet's stages, the last `attention[s]` blocks of stage s
    attention blocks (MapAttention) instead of residual conv blocks. The official AlterNet
    (models/alternet.py) has none in the first stage and adds them from the last stage backwards.

    Args:
        image_size, channels, n_classes: the data's. widths: channels per stage. blocks: blocks per
        stage. attention: attention blocks at the end of each stage (the first block of every later
        stage downsamples and stays a conv block). heads: attention heads.
    """

    def __init__(self, *, image_size: int, channels: int, n_classes: int, widths: list[int], blocks: list[int],
                 attention: list[int], heads: int):
        super().__init__()
        if not len(widths) == len(blocks) == len(attention) or any(
                a > b - (1 if stage else 0) for stage, (a, b) in enumerate(zip(attention, blocks))):
            raise ValueError(f"per stage a width, a block count and at most as many attention blocks as the stage "
                             f"has blocks after its first: widths {widths}, blocks {blocks}, attention {attention}")
        self.config = {"image_size": image_size, "channels": channels, "n_classes": n_classes,
                       "widths": list(widths), "blocks": list(blocks), "attention": list(attention), "heads": heads}
        self.stem = conv_stem(channels, widths[0])
        layers, c_in, side = [], widths[0], image_size
        for stage, (width, count, msa) in enumerate(zip(widths, blocks, attention)):
            for i in range(count):
                if i >= count - msa:
                    layers.append(MapAttention(width, heads, side * side))
                    continue
                stride = 2 if stage > 0 and i == 0 else 1
                layers.append(ResidualBlock(c_in, width, stride))
                side, c_in = side // stride, width
        self.layers = nn.ModuleList(layers)
        self.head = nn.Linear(c_in, n_classes)

    def forward(self, images: torch.Tensor, *, return_features: bool = False):
        x = self.stem(images)
        features = [("embed", as_tokens(x))]
        for layer in self.layers:
            if isinstance(layer, MapAttention):
                after_attention, x = layer(x)
                features += [("msa", after_attention), ("mlp", as_tokens(x))]
            else:
                x = layer(x)
                features.append(("conv", as_tokens(x)))
        logits = self.head(x.mean(dim=(2, 3)))
        return (logits, {"features": features, "attention": []}) if return_features else logits

