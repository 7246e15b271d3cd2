"""Typed, validated access to `params.yaml`.

Every section of the file is a frozen dataclass. `load_params` builds them and rejects unknown or
missing keys, wrong types and out-of-range values with one `ParamsError` line that names the key,
the value and what is allowed. It imports neither torch nor numpy, so a stage fails on a bad value
in well under a second, before any compute and before it writes anything.

    python -m vitheory.params [params.yaml]    # check a file, print the error or "ok"
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

import yaml

from vitheory.errors import ParamsError

DEFAULT_PATH = Path("params.yaml")


@dataclass(frozen=True)
class Rule:
    """A range rule for one field: `test(value)` must hold; `allowed` says what does."""

    test: Callable[[Any], bool]
    allowed: str


POSITIVE = Rule(lambda v: v > 0, "> 0")
NON_NEGATIVE = Rule(lambda v: v >= 0, ">= 0")
FRACTION = Rule(lambda v: 0 <= v <= 1, "a fraction in [0, 1]")
OPEN_FRACTION = Rule(lambda v: 0 < v <= 1, "a fraction in (0, 1]")


def at_least(low: int) -> Rule:
    return Rule(lambda v: v >= low, f">= {low}")


def knob(rule: Rule | None = None) -> Any:
    """A required field with an optional range rule."""
    return field(metadata={"rule": rule})


Violation = tuple[str, Any, str]  # (key relative to the section, value, what is allowed)


class Section:
    """Base of every params section: `relations` yields violations that involve several keys."""

    def relations(self) -> Iterator[Violation]:
        return iter(())


def _patterns_fit(n_patterns: int, dim: int) -> Iterator[Violation]:
    if n_patterns > dim:
        yield "n_patterns", n_patterns, f"<= dim ({dim}) for orthonormal patterns"


# --- generate -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LiTokensParams(Section):
    """[LI23] token data (SCIENCE.md section 1)."""

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

    @property
    def n_relevant(self) -> int:
        return round(self.alpha_star * self.n_tokens)

    @property
    def n_confusion(self) -> int:
        return round(self.alpha_confusion * self.n_tokens)

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


def _partition_fits(n_patches: int, set_size: int, partition: str) -> Iterator[Violation]:
    if n_patches % set_size:
        yield "set_size", set_size, f"a divisor of n_patches ({n_patches})"
    elif partition == "blocks":
        side, block = math.isqrt(n_patches), math.isqrt(set_size)
        if side * side != n_patches:
            yield "partition", partition, f"random: blocks need a square grid, n_patches = {n_patches} is not square"
        elif block * block != set_size or side % block:
            yield "set_size", set_size, (f"a square whose side divides the grid side ({side}) for partition = "
                                         f"blocks, or use partition = random")


@dataclass(frozen=True)
class SpatialDataParams(Section):
    """[JSL22] spatially structured data (SCIENCE.md section 2, the paper's Assumption 1)."""

    seed: int = knob(NON_NEGATIVE)
    n_patches: int = knob(at_least(2))  # D, on a sqrt(D) x sqrt(D) grid
    set_size: int = knob(at_least(1))  # C
    partition: Literal["blocks", "random"] = knob()
    dim: int = knob(at_least(2))  # d
    q: float = knob(FRACTION)
    noise_scale: float = knob(NON_NEGATIVE)  # sigma^2 = noise_scale / d
    n_train: int = knob(at_least(2))
    n_test: int = knob(at_least(2))

    def relations(self) -> Iterator[Violation]:
        yield from _partition_fits(self.n_patches, self.set_size, self.partition)


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
class GenerateParams(Section):
    li_tokens: LiTokensParams = knob()
    spatial: SpatialDataParams = knob()
    spatial_control: SpatialControlParams = knob()


# --- train --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShallowViTParams(Section):
    """Shape and initialisation of the [LI23] shallow ViT (vitheory.models.ShallowViT)."""

    width: int = knob(at_least(2))
    qk_init: float = knob(POSITIVE)
    out_init_std: float = knob(POSITIVE)


@dataclass(frozen=True)
class LiVitTrainParams(Section):
    seed: int = knob(NON_NEGATIVE)
    model: ShallowViTParams = knob()
    steps: int = knob(at_least(1))
    batch_size: int = knob(at_least(1))
    lr_attention: float = knob(POSITIVE)
    lr_mlp: float = knob(POSITIVE)
    token_fraction: float = knob(OPEN_FRACTION)
    log_every: int = knob(at_least(1))


@dataclass(frozen=True)
class TrainParams(Section):
    device: Literal["auto", "cpu", "cuda"] = knob()
    li_vit: LiVitTrainParams = knob()


# --- train_spatial, control, transfer (JSL-1 to JSL-4) ------------------------------------------------


@dataclass(frozen=True)
class PositionalViTParams(Section):
    """vitheory.models.PositionalViT, less the data's shape."""

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
class VanillaViTParams(Section):
    """vitheory.models.VanillaViT, less the data's shape."""

    width: int = knob(at_least(1))
    pos_init_std: float = knob(POSITIVE)
    readout_init_std: float = knob(POSITIVE)


@dataclass(frozen=True)
class ControlParams(Section):
    seeds: int = knob(at_least(1))
    steps: int = knob(at_least(1))
    lr_mixing: float = knob(POSITIVE)  # P, W_Q, W_K
    lr_readout: float = knob(POSITIVE)  # V, a
    vit: VanillaViTParams = knob()
    glm: GLMParams = knob()


@dataclass(frozen=True)
class TransferParams(Section):
    seed: int = knob(NON_NEGATIVE)  # the downstream feature and samples
    n_train: tuple[int, ...] = knob(at_least(1))
    n_test: int = knob(at_least(2))
    finetune_steps: int = knob(at_least(1))
    finetune_lr: float = knob(POSITIVE)  # v, with the positional attention frozen
    target_error: float = knob(OPEN_FRACTION)


# --- prepare_images, train_real, sparsify_real (JSL-5, JSL-6, LI-5) ----------------------------------


@dataclass(frozen=True)
class ImagesParams(Section):
    """Which real dataset and how it is split (vitheory.images)."""

    dataset: Literal["digits", "cifar10", "cifar100", "svhn", "imagefolder"] = knob()
    root: str = knob()  # downloads and image folders live under root/<dataset>/
    seed: int = knob(NON_NEGATIVE)
    val_fraction: float = knob(Rule(lambda v: 0 < v < 1, "in (0, 1)"))
    test_fraction: float = knob(Rule(lambda v: 0 < v < 1, "in (0, 1)"))  # datasets without a test split
    train_fraction: float = knob(OPEN_FRACTION)  # class-balanced share of the training images used


@dataclass(frozen=True)
class ViTPreset(Section):
    """vitheory.vision.SmallViT, less the data's shape."""

    patch: int = knob(at_least(1))
    depth: int = knob(at_least(1))
    heads: int = knob(at_least(1))
    width: int = knob(at_least(2))
    mlp_ratio: int = knob(at_least(1))
    attention: Literal["vanilla", "positional"] = knob()
    pool: Literal["cls", "gap"] = knob()

    def relations(self) -> Iterator[Violation]:
        if self.width % self.heads:
            yield "heads", self.heads, f"a divisor of width ({self.width})"


@dataclass(frozen=True)
class ResNetPreset(Section):
    """vitheory.vision.SmallResNet, less the data's shape."""

    widths: tuple[int, ...] = knob(at_least(1))
    blocks: tuple[int, ...] = knob(at_least(1))

    def relations(self) -> Iterator[Violation]:
        if len(self.blocks) != len(self.widths):
            yield "blocks", list(self.blocks), f"one count per stage ({len(self.widths)} widths)"


@dataclass(frozen=True)
class RealModels(Section):
    vit: ViTPreset = knob()
    vit_positional: ViTPreset = knob()
    cnn: ResNetPreset = knob()


@dataclass(frozen=True)
class RealTrainParams(Section):
    seeds: int = knob(at_least(1))
    epochs: int = knob(at_least(1))
    batch_size: int = knob(at_least(1))
    lr: float = knob(POSITIVE)
    weight_decay: float = knob(NON_NEGATIVE)
    shift: int = knob(NON_NEGATIVE)  # random translation, pixels
    hflip: bool = knob()
    permutation_seed: int = knob(NON_NEGATIVE)
    permutation_block: int = knob(at_least(1))  # side of the squares the permutation moves (1: pixels)
    models: RealModels = knob()


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


@dataclass(frozen=True)
class PKParams(Section):
    """[PK22] analyses of the natural-image ViT and CNN checkpoints."""

    n_images: int = knob(at_least(2))  # test images for the feature maps and the noise
    frequencies: tuple[float, ...] = knob(Rule(lambda v: 0 <= v <= 1, "in [0, 1] (units of pi)"))
    bandwidth: float = knob(Rule(lambda v: 0 < v <= 1, "in (0, 1]"))
    noise_rms: float = knob(POSITIVE)  # root-mean-square of the noise, in units of the normalised pixels
    noise_seed: int = knob(NON_NEGATIVE)
    hessian_batches: int = knob(at_least(1))  # training mini-batches per model
    hessian_batch_size: int = knob(at_least(1))
    hessian_top: int = knob(at_least(1))  # eigenvalues of largest magnitude per batch
    hessian_tol: float = knob(POSITIVE)  # relative accuracy of the Lanczos eigenvalues
    hessian_seed: int = knob(NON_NEGATIVE)


@dataclass(frozen=True)
class AlterNetPreset(Section):
    """vitheory.vision.AlterNet, less the data's shape."""

    widths: tuple[int, ...] = knob(at_least(1))
    blocks: tuple[int, ...] = knob(at_least(2))  # per stage, the last an attention block
    heads: int = knob(at_least(1))

    def relations(self) -> Iterator[Violation]:
        if len(self.blocks) != len(self.widths):
            yield "blocks", list(self.blocks), f"one count per stage ({len(self.widths)} widths)"
        if any(width % self.heads for width in self.widths):
            yield "heads", self.heads, f"a divisor of every width ({list(self.widths)})"


@dataclass(frozen=True)
class PKTrainParams(Section):
    """[PK22] extra trainings: small data (PK-1), AlterNet (PK-6), a global-average-pooling ViT (PK-2)."""

    fractions: tuple[float, ...] = knob(Rule(lambda v: 0 < v < 1, "in (0, 1)"))  # 1.0 is train_real's
    alternet: AlterNetPreset = knob()
    cnn_baseline: ResNetPreset = knob()  # the CNN of AlterNet's depth, all blocks convolutional


# --- phase_diagram (LI-1, LI-2) --------------------------------------------------------------------


@dataclass(frozen=True)
class PhaseDataParams(Section):
    """The token data of the phase diagram, alpha* and the training-set size left to the grid."""

    seed: int = knob(NON_NEGATIVE)
    dim: int = knob(at_least(2))
    n_patterns: int = knob(at_least(3))
    n_tokens: int = knob(at_least(1))
    confusion_ratio: float = knob(Rule(lambda v: 0 <= v < 1, "in [0, 1)"))
    noise_radius: float = knob(NON_NEGATIVE)
    noise_dist: Literal["uniform_ball", "uniform_radius", "sphere"] = knob()
    pool_size: int = knob(at_least(2))
    n_test: int = knob(at_least(2))

    def relations(self) -> Iterator[Violation]:
        yield from _patterns_fit(self.n_patterns, self.dim)

    def tokens(self, alpha_star: float, seed: int) -> LiTokensParams:
        """The full data params of one grid cell: a pool of `pool_size` training examples."""
        return LiTokensParams(
            seed=seed, n_train=self.pool_size, n_test=self.n_test, dim=self.dim, n_patterns=self.n_patterns,
            n_tokens=self.n_tokens, alpha_star=alpha_star, alpha_confusion=self.confusion_ratio * alpha_star,
            noise_radius=self.noise_radius, noise_dist=self.noise_dist)


@dataclass(frozen=True)
class TokenCNNParams(Section):
    """Shape and initialisation of the comparison CNN (vitheory.models.TokenCNN)."""

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
    bootstrap: int = knob(at_least(10))
    seed: int = knob(NON_NEGATIVE)


@dataclass(frozen=True)
class PhaseParams(Section):
    data: PhaseDataParams = knob()
    alpha_star: tuple[float, ...] = knob(Rule(lambda v: 0 < v <= 1, "in (0, 1]"))
    n_train: tuple[int, ...] = knob(at_least(1))
    seeds: int = knob(at_least(1))
    steps: int = knob(at_least(1))
    batch_size: int = knob(at_least(1))
    eval_every: int = knob(at_least(1))
    alpha_ref: float = knob(Rule(lambda v: 0 < v <= 1, "in (0, 1]"))
    vit: ViTRecipe = knob()
    cnn: CNNRecipe = knob()
    fit: FitParams = knob()

    def relations(self) -> Iterator[Violation]:
        if max(self.n_train) > self.data.pool_size:
            yield "n_train", list(self.n_train), f"<= data.pool_size ({self.data.pool_size}) (every element)"
        for alpha in self.alpha_star:
            for key, value, allowed in self.data.tokens(alpha, self.data.seed).relations():
                yield "alpha_star", list(self.alpha_star), f"such that every cell's data is valid: {key} {allowed}"


# --- sparsify (LI-4) ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SparsifyParams(Section):
    data: LiTokensParams = knob()
    keep_ratio: tuple[float, ...] = knob(OPEN_FRACTION)
    seeds: int = knob(at_least(1))
    steps: int = knob(at_least(1))
    batch_size: int = knob(at_least(1))
    vit: ViTRecipe = knob()


# --- render -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RenderParams(Section):
    dpi: int = knob(at_least(50))
    context: Literal["paper", "notebook", "talk", "poster"] = knob()
    association_threshold: float = knob(Rule(lambda v: -1 <= v <= 1, "in [-1, 1]"))


# --- the whole file -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Params(Section):
    generate: GenerateParams = knob()
    train: TrainParams = knob()
    phase: PhaseParams = knob()
    sparsify: SparsifyParams = knob()
    images: ImagesParams = knob()
    real: RealTrainParams = knob()
    sparsify_real: SparsifyRealParams = knob()
    pk_train: PKTrainParams = knob()
    pk: PKParams = knob()
    spatial: SpatialTrainParams = knob()
    control: ControlParams = knob()
    transfer: TransferParams = knob()
    render: RenderParams = knob()

    def relations(self) -> Iterator[Violation]:
        n_train = self.generate.li_tokens.n_train
        if self.train.li_vit.batch_size > n_train:
            yield "train.li_vit.batch_size", self.train.li_vit.batch_size, (
                f"<= generate.li_tokens.n_train ({n_train})")
        if max(self.transfer.n_train) > self.generate.spatial.n_train:
            yield "transfer.n_train", list(self.transfer.n_train), (
                f"<= generate.spatial.n_train ({self.generate.spatial.n_train}) (every element): scratch "
                "training is compared at sizes the pre-training could have seen")


def _describe(kind: Any) -> str:
    if get_origin(kind) is tuple:
        item = get_args(kind)[0]
        if get_origin(item) is Literal:
            return "a list of values, each " + _describe(item)
        return "a list of " + {int: "integers", float: "numbers"}[item]
    if get_origin(kind) is Literal:
        return "one of " + ", ".join(str(choice) for choice in get_args(kind))
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(
        kind, getattr(kind, "__name__", str(kind)))


def _fail(key: str, value: Any, allowed: str) -> ParamsError:
    shown = list(value) if isinstance(value, tuple) else value  # as written in the YAML
    return ParamsError(f"{key} = {shown!r} is not allowed: must be {allowed}")


def _convert(kind: Any, value: Any, key: str) -> Any:
    if is_dataclass(kind):
        return _build(kind, value, key)
    if get_origin(kind) is Literal:
        if value not in get_args(kind):
            raise _fail(key, value, _describe(kind))
        return value
    if get_origin(kind) is tuple:  # a grid: a non-empty YAML list of one element type
        if not isinstance(value, list) or not value:
            raise _fail(key, value, f"a non-empty {_describe(kind)[2:]}")
        return tuple(_convert(get_args(kind)[0], item, key) for item in value)
    ok = {
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, (int, float)) and not isinstance(value, bool),
        str: isinstance(value, str),
        bool: isinstance(value, bool),
    }[kind]
    if not ok:
        raise _fail(key, value, _describe(kind))
    return float(value) if kind is float else value


def _build(cls: type, raw: Any, prefix: str) -> Any:
    where = prefix or "the top level"
    if not isinstance(raw, dict):
        raise _fail(prefix or "params", raw, f"a mapping with keys {[f.name for f in fields(cls)]}")
    names = [f.name for f in fields(cls)]
    for key in raw:
        if key not in names:
            raise ParamsError(f"{prefix + '.' if prefix else ''}{key} is not a known key "
                              f"(known in {where}: {', '.join(names)})")
    hints = get_type_hints(cls)
    values = {}
    for f in fields(cls):
        key = f"{prefix}.{f.name}" if prefix else f.name
        if f.name not in raw:
            raise ParamsError(f"{key} is missing: add it to params.yaml ({_describe(hints[f.name])})")
        value = _convert(hints[f.name], raw[f.name], key)
        rule = f.metadata.get("rule")
        for item in value if isinstance(value, tuple) else (value,):
            if rule is not None and not rule.test(item):
                raise _fail(key, value, f"{rule.allowed} (every element)" if value is not item else rule.allowed)
        values[f.name] = value
    section = cls(**values)
    for key, value, allowed in section.relations():
        raise _fail(f"{prefix}.{key}" if prefix else key, value, allowed)
    return section


def parse_params(raw: Any) -> Params:
    """Validate an already-parsed params mapping."""
    return _build(Params, raw, "")


def load_params(path: str | Path = DEFAULT_PATH) -> Params:
    """Read and validate a params file; raise ParamsError (one line) on anything not allowed."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise ParamsError(f"{path}: cannot be read ({err.strerror}); run from the repository root") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark else ""
        raise ParamsError(f"{path}: not valid YAML{line}") from None
    try:
        return parse_params(raw)
    except ParamsError as err:
        raise ParamsError(f"{path}: {err}") from None


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT_PATH
    try:
        load_params(path)
    except ParamsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{path}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
