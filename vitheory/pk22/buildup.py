"""[PK22] PK-13, the build-up rule (Sec. 4): from the all-conv model, replace convolutions by attention blocks
from the end of the network while accuracy improves, so that they close stages. The placements compared, each
AlterNet's blocks and widths with its attention blocks elsewhere (AlterNet's `placement`): the official one
(pk_train's AlterNet, its attention closing the stages after the first), the same attention blocks moved to
the first block of their stage that does not downsample (`stage_start`), and the last stage's blocks after
its downsampling one all attention (`model_end`: attention at the end of the model, as in a transformer
head). The all-conv model is train_real's CNN, of AlterNet's shape.

The positive control: pk_train's AlterNet with its closing attention block removed (PK-7's lesion: its
residual branches add nothing), a placement known to be worse, since the network trained with that block.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import torch
from torch import nn

from vitheory.core.config import Section, Violation, at_least, knob
from vitheory.images.params import RecipeParams
from vitheory.images.training import LoadedImages
from vitheory.pk22.trainings import train_named
from vitheory.pk22.lesion import lesions
from vitheory.pk22.models import AlterNet
from vitheory.pk22.params import AlterNetPreset

COLUMNS = {"model": str, "seed": int, "test_loss": float, "test_accuracy": float}
ALL_CONV, STAGE_END, CONTROL = "cnn", "alternet", "lesioned"  # train_real's CNN, pk_train's AlterNet, the control
PLACEMENTS = ("stage_start", "model_end")  # trained here, each a params.yaml key of `pk_buildup`


@dataclass(frozen=True)
class BuildUpParams(Section):
    """params.yaml `pk_buildup`: PK-13's placements, attention blocks by their index over the network (from 0)."""

    stage_start: tuple[int, ...] = knob(at_least(0))
    model_end: tuple[int, ...] = knob(at_least(0))


def stage_starts(blocks: tuple[int, ...]) -> list[int]:
    """The index over the network of each stage's first block."""
    return [sum(blocks[:stage]) for stage in range(len(blocks))]


def official_placement(preset: AlterNetPreset) -> list[int]:
    """The indices of AlterNet's attention blocks: the last attention[s] of each stage s."""
    return sorted(start + count - 1 - i for start, count, msa in zip(stage_starts(preset.blocks), preset.blocks,
                                                                      preset.attention) for i in range(msa))


def per_stage(preset: AlterNetPreset, placement: tuple[int, ...]) -> list[int]:
    """How many of `placement`'s blocks each stage holds."""
    return [sum(start <= i < start + count for i in placement)
            for start, count in zip(stage_starts(preset.blocks), preset.blocks)]


def placement_violations(preset: AlterNetPreset, cfg: BuildUpParams) -> Iterator[Violation]:
    """What makes a placement not the one its name says, against AlterNet's blocks (pk_train.alternet)."""
    starts, total = stage_starts(preset.blocks), sum(preset.blocks)
    official = official_placement(preset)
    # the first block of every later stage downsamples: its skip is a projection, it stays a convolution
    replaceable = [start + (1 if stage else 0) for stage, start in enumerate(starts)]
    for name in PLACEMENTS:
        placement = getattr(cfg, name)
        if len(set(placement)) != len(placement) or max(placement) >= total or set(placement) & set(starts[1:]):
            yield name, list(placement), (f"distinct blocks of the {total} (blocks {list(preset.blocks)}), none the "
                                          f"first of a later stage (blocks {starts[1:]}), which downsamples")
        elif sorted(placement) == official:
            yield name, list(placement), f"another placement than AlterNet's own ({official})"
    start = cfg.stage_start
    if per_stage(preset, start) != list(preset.attention) or not set(start) <= set(replaceable):
        yield "stage_start", list(start), (f"AlterNet's attention blocks ({official}) each moved to the first block "
                                           f"of its stage that does not downsample ({replaceable})")
    last = range(replaceable[-1], total)
    if sorted(cfg.model_end) != list(last):
        yield "model_end", list(cfg.model_end), f"every block of the last stage after its first ({list(last)})"


def build_placement(preset: AlterNetPreset, placement: tuple[int, ...], image_size: int, channels: int,
                    n_classes: int) -> AlterNet:
    """AlterNet of `preset`'s widths, blocks and heads, its attention blocks at `placement`."""
    fields = asdict(preset) | {"attention": per_stage(preset, placement), "placement": list(placement)}
    return AlterNet(image_size=image_size, channels=channels, n_classes=n_classes, **fields)


def train_placements(preset: AlterNetPreset, cfg: BuildUpParams, real: RecipeParams, data: LoadedImages,
                     device: torch.device, folder: Path) -> dict[str, list[nn.Module]]:
    """Per placement of `PLACEMENTS`, one AlterNet per seed of `real.seeds`, trained by train_real's recipe on
    all the training images, each saved under `folder`/<placement>/seed_<s>/."""
    shape = (data.image_size, data.channels, data.n_classes)
    return train_named({name: partial(build_placement, preset, getattr(cfg, name), *shape) for name in PLACEMENTS},
                       real, data, device, folder,
                       lambda name: {"stage": "pk_buildup", "model": name, "placement": list(getattr(cfg, name))})


def without_closing_attention(model: AlterNet) -> nn.Module:
    """The control: `model` with its last attention block's branches removed (PK-7's lesion of it)."""
    found = [lesioned for where, lesioned in lesions(model) if where["kind"] == "msa"]
    if not found:
        raise ValueError("the control removes an attention block: the model has none")
    return found[-1]
