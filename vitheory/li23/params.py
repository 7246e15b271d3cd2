"""[LI23] params sections: the token data, the shallow ViT and the CNN, LI-3's training, the phase grid
(LI-1, LI-2), token sparsification (LI-4) and its real-image counterpart (LI-5)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

from vitheory.core.config import (
    FRACTION,
    NON_NEGATIVE,
    OPEN_FRACTION,
    POSITIVE,
    Rule,
    Section,
    Violation,
    at_least,
    knob,
)


def _patterns_fit(n_patterns: int, dim: int) -> Iterator[Violation]:
    if n_patterns > dim:
        yield "n_patterns", n_patterns, f"<= dim ({dim}) for orthonormal patterns"


def _distinct_counts(key: str, shown: Any, values: Iterable[float], count: Callable[[float], int],
                     counted: str) -> Iterator[Violation]:
    """Two values of a grid that give one token count are the same data twice: a duplicate row under
    another label, and a point at the wrong x of any fit over the values (alpha* 0.1 and 0.125 both
    give 2 tokens of 20). `counted` says what `count` counts; `shown` is the key's value."""
    first: dict[int, float] = {}
    for value in values:
        n = count(value)
        if n in first:
            yield key, shown, (f"values of distinct token counts: {first[n]:g} and {value:g} both give {n} {counted}, "
                               "the same data twice; drop one or move it to a value of another count")
            return
        first[n] = value


@dataclass(frozen=True)
class LiTokensParams(Section):
    """[LI23] token data (docs/SCIENCE.md section 1)."""

    seed: int = knob(NON_NEGATIVE)
    n_train: int = knob(at_least(2))
    n_test: int = knob(at_least(2))
    dim: int = knob(at_least(2))
    n_patterns: int = knob(at_least(3))
    n_tokens: int = knob(at_least(1))
    alpha_star: float = knob(Rule(lambda v: 0 < v <= 1, "a fraction in (0, 1]"))
    alpha_confusion: float = knob(FRACTION)
    noise_radius: float = knob(NON_NEGATIVE)
    noise_dist: Literal["uniform_ball", "uniform_radius", "sphere"] = knob()
    noisy_share: float = knob(FRACTION)  # tokens drawn at random whose noise has norm noisy_radius instead
    noisy_radius: float = knob(NON_NEGATIVE)

    @property
    def n_relevant(self) -> int:
        return round(self.alpha_star * self.n_tokens)

    @property
    def n_confusion(self) -> int:
        return round(self.alpha_confusion * self.n_tokens)

    def data_key(self) -> tuple[LiTokensParams, str]:
        """What the drawn data are (vitheory.grid.same_data): the tokens are drawn by count
        (vitheory.li23.tokens), so the section with each fraction at its whole count's, and the counts."""
        whole = replace(self, alpha_star=self.n_relevant / self.n_tokens,
                        alpha_confusion=self.n_confusion / self.n_tokens)
        return whole, f"{self.n_relevant} relevant and {self.n_confusion} confusion tokens of {self.n_tokens}"

    def relations(self) -> Iterator[Violation]:
        yield from _patterns_fit(self.n_patterns, self.dim)
        if self.alpha_confusion >= self.alpha_star:
            yield "alpha_confusion", self.alpha_confusion, f"< alpha_star ({self.alpha_star})"
        if self.n_relevant < 1:
            yield "alpha_star", self.alpha_star, (
                f"at least one relevant token: round(alpha_star * n_tokens) >= 1 "
                f"with n_tokens = {self.n_tokens}")
        if self.n_relevant + self.n_confusion > self.n_tokens:
            yield "alpha_confusion", self.alpha_confusion, (
                f"relevant + confusion tokens ({self.n_relevant} + {self.n_confusion}) "
                f"<= n_tokens ({self.n_tokens})")


@dataclass(frozen=True)
class ShallowViTParams(Section):
    """Shape and initialisation of the [LI23] shallow ViT (vitheory.li23.models.ShallowViT)."""

    width: int = knob(at_least(2))
    qk_init: float = knob(POSITIVE)
    out_init_std: float = knob(POSITIVE)


@dataclass(frozen=True)
class LiVitTrainParams(Section):
    seed: int = knob(NON_NEGATIVE)  # of the first model; the others count up from it
    seeds: int = knob(at_least(1))
    model: ShallowViTParams = knob()
    steps: int = knob(at_least(1))
    batch_size: int = knob(at_least(1))
    lr_attention: float = knob(POSITIVE)
    lr_mlp: float = knob(POSITIVE)
    token_fraction: float = knob(OPEN_FRACTION)
    log_every: int = knob(at_least(1))


# --- phase_diagram (LI-1, LI-2) --------------------------------------------------------------------


@dataclass(frozen=True)
class PhaseDataParams(Section):
    """The token data of the phase diagram, alpha* and the training-set size left to the grid."""

    seed: int = knob(NON_NEGATIVE)
    dim: int = knob(at_least(2))
    n_patterns: int = knob(at_least(3))
    n_tokens: int = knob(at_least(1))
    # c, the same at every alpha*: alpha# = c / n_tokens, a whole count by construction (a ratio of alpha*
    # is not: at 20 tokens no nonzero ratio gives whole counts at alpha* 0.1, 0.15, 0.2, 0.3 and 0.4)
    confusion_tokens: int = knob(NON_NEGATIVE)
    noise_radius: float = knob(NON_NEGATIVE)
    noise_dist: Literal["uniform_ball", "uniform_radius", "sphere"] = knob()
    pool_size: int = knob(at_least(2))
    n_test: int = knob(at_least(2))

    def relations(self) -> Iterator[Violation]:
        yield from _patterns_fit(self.n_patterns, self.dim)

    def relevant(self, alpha_star: float) -> int:
        """The label-relevant tokens of an example at alpha*."""
        return cell_tokens(self, alpha_star, self.seed).n_relevant

    def inside_premise(self, alpha_star: float) -> bool:
        """Theorem 1's premise alpha# < alpha*, on the tokens drawn: more relevant tokens than confusion ones.
        [LI23]'s bounds say nothing of a cell outside it: it is not run."""
        return self.relevant(alpha_star) > self.confusion_tokens

    def outside_premise(self, alphas: Iterable[float]) -> list[float]:
        return [alpha for alpha in alphas if not self.inside_premise(alpha)]


def cell_tokens(data: PhaseDataParams, alpha_star: float, seed: int) -> LiTokensParams:
    """The token data of one phase-grid cell: a pool of `pool_size` training examples, confusion_tokens
    confusion tokens (alpha# = confusion_tokens / n_tokens). Shared by the grid and by the validation of
    every cell."""
    return LiTokensParams(
        seed=seed, n_train=data.pool_size, n_test=data.n_test, dim=data.dim, n_patterns=data.n_patterns,
        n_tokens=data.n_tokens, alpha_star=alpha_star, alpha_confusion=data.confusion_tokens / data.n_tokens,
        noise_radius=data.noise_radius, noise_dist=data.noise_dist, noisy_share=0.0, noisy_radius=0.0)


def sweep_alpha(data: PhaseDataParams, key: str, alpha_star: float) -> Iterator[Violation]:
    """A sweep's one alpha* (LI-6's, LI-7's) against the phase data it draws: inside Theorem 1's premise,
    as a sweep has no other alpha* to read, and every cell's data valid."""
    if not data.inside_premise(alpha_star):
        yield key, alpha_star, (
            f"an alpha* of more relevant tokens than phase.data.confusion_tokens ({data.confusion_tokens}), Theorem "
            f"1's premise alpha# < alpha*: round(alpha* x {data.n_tokens}) = {data.relevant(alpha_star)}")
        return
    for name, value, allowed in cell_tokens(data, alpha_star, data.seed).relations():
        yield key, alpha_star, f"such that the sweep's data is valid: {name} {allowed}"


@dataclass(frozen=True)
class TokenCNNParams(Section):
    """Shape and initialisation of the comparison CNN (vitheory.li23.models.TokenCNN)."""

    width: int = knob(at_least(2))
    kernel: int = knob(at_least(1))
    conv_init_std: float = knob(POSITIVE)
    out_init_std: float = knob(POSITIVE)

    def relations(self) -> Iterator[Violation]:
        if self.kernel % 2 == 0:
            yield "kernel", self.kernel, "odd (a window centred on each token)"


@dataclass(frozen=True)
class ViTRecipe(Section):
    model: ShallowViTParams = knob()
    lr_mixing: float = knob(POSITIVE)  # W_Q, W_K
    lr_mlp: float = knob(POSITIVE)  # W_V, W_O


@dataclass(frozen=True)
class CNNRecipe(Section):
    model: TokenCNNParams = knob()
    lr_mixing: float = knob(POSITIVE)  # W_conv
    lr_mlp: float = knob(POSITIVE)  # W_O


@dataclass(frozen=True)
class FitParams(Section):
    success_rate: float = knob(OPEN_FRACTION)


# ours: the fewest alpha* a phase grid's readings may rest on once cells outside Theorem 1's premise are left
# out: a line through two points fits any two, so their slope tests nothing of a power law; a third can leave
# the line (a grid of fewer alpha* must keep them all)
FIT_ALPHAS = 3


@dataclass(frozen=True)
class GridParams(Section):
    """One phase grid: alpha* x training-set size N x seeds."""

    alpha_star: tuple[float, ...] = knob(Rule(lambda v: 0 < v <= 1, "in (0, 1]"))
    n_train: tuple[int, ...] = knob(at_least(1))
    seeds: int = knob(at_least(1))


@dataclass(frozen=True)
class PhaseGrids(Section):
    """LI-1 and LI-2 are decided on `default` and stated again on `wide` (docs/SCIENCE.md: bounds, not laws)."""

    default: GridParams = knob()
    wide: GridParams = knob()


@dataclass(frozen=True)
class PhaseParams(Section):
    data: PhaseDataParams = knob()
    grids: PhaseGrids = knob()
    steps: int = knob(at_least(1))
    batch_size: int = knob(at_least(1))
    eval_every: int = knob(at_least(1))
    vit: ViTRecipe = knob()
    cnn: CNNRecipe = knob()
    fit: FitParams = knob()

    def relations(self) -> Iterator[Violation]:
        for name in ("default", "wide"):
            grid: GridParams = getattr(self.grids, name)
            if max(grid.n_train) > self.data.pool_size:
                yield (f"grids.{name}.n_train", list(grid.n_train),
                       f"<= data.pool_size ({self.data.pool_size}) (every element)")
            for alpha in grid.alpha_star:
                # a cell outside the premise is not run, but its alpha* still gives valid data (a relevant token)
                run = self.data if self.data.inside_premise(alpha) else replace(self.data, confusion_tokens=0)
                for key, value, allowed in cell_tokens(run, alpha, self.data.seed).relations():
                    yield (f"grids.{name}.alpha_star", list(grid.alpha_star),
                           f"such that every cell's data is valid: {key} {allowed}")
            yield from self._premise_leaves_a_fit(name, grid)
            yield from _distinct_counts(
                f"grids.{name}.alpha_star", list(grid.alpha_star), grid.alpha_star,
                lambda alpha: cell_tokens(self.data, alpha, self.data.seed).n_relevant,
                f"relevant tokens of {self.data.n_tokens} (round(alpha* x n_tokens))")

    def _premise_leaves_a_fit(self, name: str, grid: GridParams) -> Iterator[Violation]:
        """The cells outside Theorem 1's premise are not run; the grid's readings (N_min and steps per alpha*,
        their exponents) need FIT_ALPHAS alpha* inside it, or all of a smaller grid's."""
        needed = min(FIT_ALPHAS, len(grid.alpha_star))
        counts = sorted((self.data.relevant(alpha) for alpha in grid.alpha_star), reverse=True)
        if len(self.data.outside_premise(grid.alpha_star)) > len(grid.alpha_star) - needed:
            yield "data.confusion_tokens", self.data.confusion_tokens, (
                f"in [0, {counts[needed - 1] - 1}]: grids.{name}.alpha_star {list(grid.alpha_star)} gives "
                f"{sorted(counts)} relevant tokens of {self.data.n_tokens}, a cell runs only with more relevant "
                f"than confusion tokens (Theorem 1's premise alpha# < alpha*), and the grid's fit over alpha* "
                f"needs {needed} alpha* run")


@dataclass(frozen=True)
class NoiseSweepParams(Section):
    """LI-6: the phase diagram's ViT recipe over token noise radii tau at one alpha* (phase.data otherwise)."""

    alpha_star: float = knob(Rule(lambda v: 0 < v <= 1, "in (0, 1]"))
    noise_radius: tuple[float, ...] = knob(NON_NEGATIVE)
    n_train: tuple[int, ...] = knob(at_least(1))
    seeds: int = knob(at_least(1))

    def relations(self) -> Iterator[Violation]:
        if len(self.noise_radius) < 2 or list(self.noise_radius) != sorted(set(self.noise_radius)):
            yield "noise_radius", list(self.noise_radius), "at least two distinct radii, ascending"


# --- sparsify (LI-4), sparsify_real (LI-5) -----------------------------------------------------------


@dataclass(frozen=True)
class SparsifyParams(Section):
    data: LiTokensParams = knob()
    keep_ratio: tuple[float, ...] = knob(OPEN_FRACTION)
    seeds: int = knob(at_least(1))
    steps: int = knob(at_least(1))
    batch_size: int = knob(at_least(1))
    eval_every: int = knob(at_least(1))  # steps between the checks that stop a member at zero training loss
    vit: ViTRecipe = knob()

    def relations(self) -> Iterator[Violation]:
        counts = {"relevant": self.data.n_relevant, "confusion": self.data.n_confusion,
                  "irrelevant": self.data.n_tokens - self.data.n_relevant - self.data.n_confusion}
        for keep in self.keep_ratio:
            for kind, count in (*counts.items(), ("", self.data.n_tokens)):
                if abs(keep * count - round(keep * count)) > 1e-9:
                    yield "keep_ratio", list(self.keep_ratio), (
                        f"a share that keeps a whole number of the tokens of every kind ({', '.join(f'{c} {k}' for k, c in counts.items())} of "
                        f"{self.data.n_tokens}): {keep:g} x {count}{' ' + kind if kind else ''} is not whole")
                    return
        yield from _distinct_counts("keep_ratio", list(self.keep_ratio), self.keep_ratio,
                                    lambda keep: round(keep * self.data.n_tokens), f"kept tokens of {self.data.n_tokens}")


@dataclass(frozen=True)
class SpuriousParams(Section):
    correlation: float = knob(FRACTION)  # share of training images whose marker is their own class's
    epochs: int = knob(at_least(1))
    seed: int = knob(NON_NEGATIVE)  # marker positions and which images carry their own class's


@dataclass(frozen=True)
class SparsifyRealParams(Section):
    keep_tokens: tuple[int, ...] = knob(at_least(1))  # tokens kept of the ViT's patches
    finetune_epochs: int = knob(at_least(1))
    finetune_lr: float = knob(POSITIVE)
    spurious: SpuriousParams = knob()


# the params.yaml keys [LI23] owns (vitheory.papers), each to its section
SECTIONS = {"generate.li_tokens": LiTokensParams, "train.li_vit": LiVitTrainParams, "phase": PhaseParams,
            "noise_sweep": NoiseSweepParams, "sparsify": SparsifyParams, "sparsify_real": SparsifyRealParams}


def relations(params: Any) -> Iterator[Violation]:
    """Rules across [LI23]'s sections, over the whole file's params."""
    n_train = params.generate.li_tokens.n_train
    if params.train.li_vit.batch_size > n_train:
        yield "train.li_vit.batch_size", params.train.li_vit.batch_size, f"<= generate.li_tokens.n_train ({n_train})"
    sweep, data = params.noise_sweep, params.phase.data
    if max(sweep.n_train) > data.pool_size:
        yield "noise_sweep.n_train", list(sweep.n_train), f"<= phase.data.pool_size ({data.pool_size}) (every element)"
    yield from sweep_alpha(data, "noise_sweep.alpha_star", sweep.alpha_star)
