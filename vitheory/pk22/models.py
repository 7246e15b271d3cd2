"""[PK22] models: AlterNet, SmallResNet's stages with attention blocks at the ends of stages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import torch
from torch import nn

from vitheory.images.models import Block, SmallResNet, as_tokens, conv_stem, residual_stages


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


class AlterNet(nn.Module):
    """[PK22]'s AlterNet at small scale: SmallResNet's stages, the last `attention[s]` blocks of stage s
    attention blocks (MapAttention) instead of residual conv blocks. The official AlterNet
    (models/alternet.py) has none in the first stage and adds them from the last stage backwards.

    Args:
        image_size, channels, n_classes: the data's. widths: channels per stage. blocks: blocks per
        stage. attention: attention blocks at the end of each stage (the first block of every later
        stage downsamples and stays a conv block). heads: attention heads. placement: where given, the
        attention blocks' indices over the whole network (from 0) instead, anywhere but a downsampling
        block (PK-13's placements); `attention` must then count them per stage.
    """

    KIND: ClassVar[str] = "alternet"  # its switch in real.compile_by_kind

    def __init__(self, *, image_size: int, channels: int, n_classes: int, widths: Sequence[int],
                 blocks: Sequence[int], attention: Sequence[int], heads: int, placement: Sequence[int] = ()):
        super().__init__()
        if not len(widths) == len(blocks) == len(attention) or any(
                a > b - (1 if stage else 0) for stage, (a, b) in enumerate(zip(attention, blocks))):
            raise ValueError(f"per stage a width, a block count and at most as many attention blocks as the stage "
                             f"has blocks after its first: widths {widths}, blocks {blocks}, attention {attention}")
        starts = [sum(blocks[:stage]) for stage in range(len(blocks))]
        at = set(placement) or {start + count - i - 1 for start, count, a in zip(starts, blocks, attention)
                                for i in range(a)}
        downsampling = set(starts[1:])
        per_stage = [sum(start <= i < start + count for i in at) for start, count in zip(starts, blocks)]
        if placement and (len(at) != len(placement) or at & downsampling or not at <= set(range(sum(blocks)))
                          or per_stage != list(attention)):
            raise ValueError(f"placement {list(placement)}: distinct blocks of the {sum(blocks)}, none downsampling "
                             f"(blocks {sorted(downsampling)}), counted per stage by attention {list(attention)}")
        # a placement is written only where given: checkpoints written before the option load as they are
        self.config = {"image_size": image_size, "channels": channels, "n_classes": n_classes,
                       "widths": list(widths), "blocks": list(blocks), "attention": list(attention), "heads": heads
                       } | ({"placement": list(placement)} if placement else {})
        self.stem = conv_stem(channels, widths[0])
        self.layers, c_in = residual_stages(widths, blocks, at, image_size,
                                            lambda width, positions: MapAttention(width, heads, positions))
        self.head = nn.Linear(c_in, n_classes)

    forward = SmallResNet.forward  # its attention blocks return (after attention, map), labelled msa and mlp

