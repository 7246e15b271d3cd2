"""Cluttered translated digits: a real-image regime where most of a ViT's tokens are label-irrelevant.

After Mnih et al. 2014 (Recurrent Models of Visual Attention, "cluttered translated MNIST"), built
from scikit-learn's 8 x 8 digits, offline: each source digit, upscaled by nearest neighbours, lands at
a random place near the centre of a larger canvas, with fragments cut from other digits as clutter. The source
digits are split into train, val and test first (class-balanced, as `split_indices` does), and each
split's clutter is cut from its own digits, so no source image reaches two splits. Same params,
same bytes.
"""

from __future__ import annotations

import torch

from vitheory.images.datasets import Images, split_indices
from vitheory.images.params import ClutteredParams, ImagesParams


def upscale(images: torch.Tensor, scale: int) -> torch.Tensor:
    """(N, H, W) -> (N, scale H, scale W), every pixel a scale x scale block."""
    return images.repeat_interleave(scale, dim=1).repeat_interleave(scale, dim=2)


def compose(digits: torch.Tensor, labels: torch.Tensor, cfg: ClutteredParams, generator: torch.Generator
            ) -> dict[str, torch.Tensor]:
    """`cfg.copies` canvases per digit of `digits` (N, 8, 8) uint8: X (N copies, canvas, canvas, 1) uint8, y,
    `source` (the digit's index in `digits`) and `box` (row, column of the digit's top-left corner, at
    most `cfg.jitter` from the centred place in each direction).
    Clutter pieces are cut from other digits of `digits` only; pieces and digit are combined by
    maximum, so a piece never hides a stroke."""
    big = upscale(digits, cfg.scale)
    n, side = len(digits), big.shape[-1]
    source = torch.arange(n).repeat(cfg.copies)
    count = len(source)
    canvas = torch.zeros(count, cfg.canvas, cfg.canvas, dtype=torch.uint8)
    for _ in range(cfg.fragments):
        # another digit of the split: shift by 1..n-1 places, so never the image's own
        donor = (source + torch.randint(1, n, (count,), generator=generator)) % n if n > 1 else source
        cut = torch.randint(0, side - cfg.fragment + 1, (count, 2), generator=generator)
        place = torch.randint(0, cfg.canvas - cfg.fragment + 1, (count, 2), generator=generator)
        for i in range(count):
            piece = big[donor[i], cut[i, 0]:cut[i, 0] + cfg.fragment, cut[i, 1]:cut[i, 1] + cfg.fragment]
            window = canvas[i, place[i, 0]:place[i, 0] + cfg.fragment, place[i, 1]:place[i, 1] + cfg.fragment]
            torch.maximum(window, piece, out=window)
    centred = (cfg.canvas - side) // 2
    box = torch.randint(centred - cfg.jitter, centred + cfg.jitter + 1, (count, 2), generator=generator)
    for i in range(count):
        window = canvas[i, box[i, 0]:box[i, 0] + side, box[i, 1]:box[i, 1] + side]
        torch.maximum(window, big[source[i]], out=window)
    return {"X": canvas[..., None], "y": labels[source], "source": source, "box": box}


def cluttered_splits(digits: Images, cfg: ImagesParams) -> dict[str, dict[str, torch.Tensor]]:
    """Train, val and test canvases, each split from its own source digits (`source` indexes `digits`,
    scikit-learn's: `read_digits().train`), a generator per split seeded from `cfg.seed`."""
    index = split_indices(digits.y, val_fraction=cfg.val_fraction, test_fraction=cfg.test_fraction,
                          train_fraction=cfg.train_fraction, seed=cfg.seed)
    splits = {}
    for offset, name in enumerate(("train", "val", "test"), start=1):
        generator = torch.Generator().manual_seed(cfg.seed * 1000 + offset)
        made = compose(digits.X[index[name], ..., 0], digits.y[index[name]], cfg.cluttered, generator)
        splits[name] = made | {"source": index[name][made["source"]]}
    return splits
