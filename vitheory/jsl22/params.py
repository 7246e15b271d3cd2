"""[JSL22] params sections: the spatially structured data and its negative control, the positional and
vanilla ViTs, the linear model, and transfer (JSL-1 to JSL-4)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from vitheory.core.config import FRACTION, NON_NEGATIVE, OPEN_FRACTION, POSITIVE, Section, Violation, at_least, knob


def _partition_fits(n_patches: int, set_size: int, partition: str, key: str = "partition") -> Iterator[Violation]:
    if n_patches % set_size:
        yield "set_size", set_size, f"a divisor of n_patches ({n_patches})"
    elif partition == "blocks":
        side, block = math.isqrt(n_patches), math.isqrt(set_size)
        if side * side != n_patches:
            yield key, partition, f"random: blocks need a square grid, n_patches = {n_patches} is not square"
        elif block * block != set_size or side % block:
            yield "set_size", set_size, (f"a square whose side divides the grid side ({side}) for partition = "
                                         f"blocks, or use partition = random")


@dataclass(frozen=True)
class SpatialDataParams(Section):
    """[JSL22] spatially structured data (docs/SCIENCE.md section 2, the paper's Assumption 1)."""

    seed: int = knob(NON_NEGATIVE)
    n_patches: int = knob(at_least(2))  # D, on a sqrt(D) x sqrt(D) grid
    set_size: int = knob(at_least(1))  # C
    partition: Literal["blocks", "random"] = knob()
    # the partition of the second data setting (JSL-1, JSL-2 variants): the same data model otherwise
    variant_partition: Literal["blocks", "random"] = knob()
    dim: int = knob(at_least(2))  # d
    q: float = knob(FRACTION)
    noise_scale: float = knob(NON_NEGATIVE)  # sigma^2 = noise_scale / d
    n_train: int = knob(at_least(2))
    n_test: int = knob(at_least(2))

    def relations(self) -> Iterator[Violation]:
        yield from _partition_fits(self.n_patches, self.set_size, self.partition)
        if self.variant_partition == self.partition:
            yield "variant_partition", self.variant_partition, f"the partition other than {self.partition!r}"
        else:
            yield from _partition_fits(self.n_patches, self.set_size, self.variant_partition, "variant_partition")


@dataclass(frozen=True)
class SpatialControlParams(Section):
    """[JSL22] Figure 2's negative control: i.i.d. N(0, 1) patches labelled by a cubic CNN over the sets."""

    seed: int = knob(NON_NEGATIVE)
    n_patches: int = knob(at_least(2))
    set_size: int = knob(at_least(1))
    partition: Literal["blocks", "random"] = knob()
    dim: int = knob(at_least(2))
    teacher_width: int = knob(at_least(1))  # filters (hidden units) of the teacher CNN
    n_train: int = knob(at_least(2))
    n_test: int = knob(at_least(2))

    def relations(self) -> Iterator[Violation]:
        yield from _partition_fits(self.n_patches, self.set_size, self.partition)


@dataclass(frozen=True)
class PositionalViTParams(Section):
    """vitheory.jsl22.models.PositionalViT, less the data's shape."""

    score_form: Literal["ppt", "qk", "free"] = knob()
    pos_dim: int = knob(at_least(1))
    pos_init_std: float = knob(POSITIVE)
    readout_init_std: float = knob(POSITIVE)


@dataclass(frozen=True)
class GLMParams(Section):
    init_std: float = knob(NON_NEGATIVE)
    steps: int = knob(at_least(1))
    lr: float = knob(POSITIVE)


@dataclass(frozen=True)
class SpatialTrainParams(Section):
    seeds: int = knob(at_least(1))
    steps: int = knob(at_least(1))
    lr_mixing: float = knob(POSITIVE)  # P (and W_Q, W_K or the free scores)
    lr_readout: float = knob(POSITIVE)  # v
    log_every: int = knob(at_least(1))
    vit: PositionalViTParams = knob()
    ablation: tuple[Literal["ppt", "qk", "free"], ...] = knob()
    ablation_lr_mixing: tuple[float, ...] = knob(POSITIVE)  # one per ablation form
    glm: GLMParams = knob()

    def relations(self) -> Iterator[Violation]:
        if self.vit.score_form in self.ablation:
            yield "ablation", list(self.ablation), f"score forms other than vit.score_form ({self.vit.score_form})"
        if len(self.ablation_lr_mixing) != len(self.ablation):
            yield ("ablation_lr_mixing", list(self.ablation_lr_mixing),
                   f"one rate per ablation form ({len(self.ablation)})")


@dataclass(frozen=True)
class MultiHeadViTParams(Section):
    """vitheory.jsl22.models.MultiHeadViT, less the data's shape."""

    width: int = knob(at_least(1))
    heads: int = knob(at_least(1))
    scores: Literal["tokens", "positions"] = knob()
    pos_init_std: float = knob(POSITIVE)
    readout_init_std: float = knob(POSITIVE)


@dataclass(frozen=True)
class ControlParams(Section):
    seeds: int = knob(at_least(1))
    steps: int = knob(at_least(1))
    optimizer: Literal["sgd", "adam"] = knob()  # full batch either way
    lr_mixing: float = knob(POSITIVE)  # P, W_Q, W_K
    lr_readout: float = knob(POSITIVE)  # V, a
    vit: MultiHeadViTParams = knob()
    glm: GLMParams = knob()


@dataclass(frozen=True)
class TransferParams(Section):
    seed: int = knob(NON_NEGATIVE)  # the downstream feature and samples
    n_train: tuple[int, ...] = knob(at_least(1))
    n_test: int = knob(at_least(2))
    finetune_steps: int = knob(at_least(1))
    finetune_lr: float = knob(POSITIVE)  # v, with the positional attention frozen
    target_error: float = knob(OPEN_FRACTION)


@dataclass(frozen=True)
class HandbuiltParams(Section):
    """Theorem 3.2's transformer written down (vitheory.jsl22.handbuilt), no training."""

    gap: float = knob(POSITIVE)  # own-set score minus other-set score, before the softmax
    pos_dim: int = knob(at_least(1))  # d_p of the construction whose P P^T turns away from the sets (>= D)
    seed: int = knob(NON_NEGATIVE)  # draws that P's directions and the negative control's wrong partition


@dataclass(frozen=True)
class PosDimSweepParams(Section):
    """The spatial recipe's ViT over positional widths d_p (described beside JSL-2), its seeds trained as one
    ensemble."""

    pos_dims: tuple[int, ...] = knob(at_least(1))
    seeds: int = knob(at_least(1))

    def relations(self) -> Iterator[Violation]:
        if len(self.pos_dims) < 2 or list(self.pos_dims) != sorted(set(self.pos_dims)):
            yield "pos_dims", list(self.pos_dims), "at least two distinct widths, ascending"


# the params.yaml keys [JSL22] owns (vitheory.papers), each to its section
SECTIONS = {"generate.spatial": SpatialDataParams, "generate.spatial_control": SpatialControlParams,
            "spatial": SpatialTrainParams, "control": ControlParams, "transfer": TransferParams,
            "handbuilt": HandbuiltParams, "pos_dim_sweep": PosDimSweepParams}


def relations(params: Any) -> Iterator[Violation]:
    """Rules across [JSL22]'s sections, over the whole file's params."""
    if max(params.transfer.n_train) > params.generate.spatial.n_train:
        yield "transfer.n_train", list(params.transfer.n_train), (
            f"<= generate.spatial.n_train ({params.generate.spatial.n_train}) (every element): scratch "
            "training is compared at sizes the pre-training could have seen")
    if params.handbuilt.pos_dim < params.generate.spatial.n_patches:
        yield "handbuilt.pos_dim", params.handbuilt.pos_dim, (
            f">= generate.spatial.n_patches ({params.generate.spatial.n_patches}): the construction whose P P^T "
            "turns away from the sets needs P of full row rank")
