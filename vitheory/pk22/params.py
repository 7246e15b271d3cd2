"""[PK22] params sections: the extra trainings (PK-1, PK-2, PK-6) and the analyses (PK-2 to PK-5)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from dataclasses import dataclass

from vitheory.core.config import NON_NEGATIVE, POSITIVE, Rule, Section, Violation, at_least, knob


@dataclass(frozen=True)
class PKParams(Section):
    """[PK22] analyses of the natural-image ViT and CNN checkpoints."""

    n_images: int = knob(at_least(2))  # test images for the feature maps and the noise
    frequencies: tuple[float, ...] = knob(Rule(lambda v: 0 <= v <= 1, "in [0, 1] (units of pi)"))
    bandwidth: float = knob(Rule(lambda v: 0 < v <= 1, "in (0, 1]"))
    noise_rms: float = knob(POSITIVE)  # root-mean-square of the noise, in units of the normalised pixels
    sign_noise_eps: float = knob(POSITIVE)  # the official attack's per-pixel sign noise, before its ring mask
    noise_seed: int = knob(NON_NEGATIVE)
    hessian_batches: int = knob(at_least(1))  # training mini-batches per model
    hessian_batch_size: int = knob(at_least(1))
    hessian_top: int = knob(at_least(1))  # eigenvalues of largest magnitude per batch
    hessian_tol: float = knob(POSITIVE)  # relative accuracy of the Lanczos eigenvalues
    hessian_seed: int = knob(NON_NEGATIVE)
    hessian_deflate: int = knob(NON_NEGATIVE)  # top eigenpairs by magnitude taken exactly into the density
    hessian_density_probes: int = knob(at_least(1))  # Rademacher probes of the rest of the spectrum
    hessian_density_steps: int = knob(at_least(2))  # Lanczos steps of the spectral density (its nodes), per probe


@dataclass(frozen=True)
class AlterNetPreset(Section):
    """vitheory.pk22.models.AlterNet, less the data's shape."""

    widths: tuple[int, ...] = knob(at_least(1))
    blocks: tuple[int, ...] = knob(at_least(1))
    attention: tuple[int, ...] = knob(at_least(0))  # attention blocks at the end of each stage
    heads: int = knob(at_least(1))

    def relations(self) -> Iterator[Violation]:
        if len(self.blocks) != len(self.widths):
            yield "blocks", list(self.blocks), f"one count per stage ({len(self.widths)} widths)"
        if len(self.attention) != len(self.widths):
            yield "attention", list(self.attention), f"one count per stage ({len(self.widths)} widths)"
        elif any(a > b - (1 if stage else 0) for stage, (a, b) in enumerate(zip(self.attention, self.blocks))):
            yield "attention", list(self.attention), (
                f"at most the blocks of each stage after its first, which downsamples (blocks {list(self.blocks)})")
        if any(width % self.heads for width in self.widths):
            yield "heads", self.heads, f"a divisor of every width ({list(self.widths)})"


@dataclass(frozen=True)
class PKTrainParams(Section):
    """[PK22] extra trainings: small data (PK-1), AlterNet (PK-6), a global-average-pooling ViT (PK-2)."""

    fractions: tuple[float, ...] = knob(Rule(lambda v: 0 < v < 1, "in (0, 1)"))  # 1.0 is train_real's
    alternet: AlterNetPreset = knob()  # compared with train_real's CNN, which must have its shape


def relations(params: Any) -> Iterator[Violation]:
    """PK-6 and PK-8 compare AlterNet with train_real's CNN as the CNN of its shape: the same stages and
    blocks, all convolutional. One CNN then serves every [PK22] and real-image claim."""
    alternet, cnn = params.pk_train.alternet, params.real.models.cnn
    for field in ("widths", "blocks"):
        if getattr(alternet, field) != getattr(cnn, field):
            yield (f"pk_train.alternet.{field}", list(getattr(alternet, field)),
                   f"real.models.cnn.{field} ({list(getattr(cnn, field))}): AlterNet is compared with that CNN")
    # PK-7 compares a stage's closing attention block with a block before it that a lesion can remove
    # (not the first of a later stage, which downsamples); the ViT's last attention with an earlier block
    if not any(count and blocks >= count + 2 for count, blocks in zip(alternet.attention[1:], alternet.blocks[1:])):
        yield ("pk_train.alternet.attention", list(alternet.attention),
               f"an attention block closing some stage after the first with a conv block before it that is not "
               f"the stage's downsampling one (blocks {list(alternet.blocks)}): PK-7 compares the two")
    if params.real.models.vit.depth < 2:
        yield "real.models.vit.depth", params.real.models.vit.depth, ">= 2: PK-7 compares the last attention with an earlier block"


# the params.yaml keys [PK22] owns (vitheory.papers), each to its section
SECTIONS = {"pk_train": PKTrainParams, "pk": PKParams}
