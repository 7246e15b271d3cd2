"""Real-image params sections: the dataset and its splits, the model presets, and the training recipe
shared by JSL-5, JSL-6, LI-5 and [PK22]."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields, make_dataclass
from typing import Any, Literal

from vitheory.core.config import NON_NEGATIVE, OPEN_FRACTION, POSITIVE, Rule, Section, Violation, at_least, knob


@dataclass(frozen=True)
class ClutteredParams(Section):
    """Cluttered translated digits (vitheory.images.cluttered): every source digit of a split, upscaled,
    at a random place on a larger canvas with fragments of other digits of the same split as clutter."""

    canvas: int = knob(at_least(8))  # side, pixels
    scale: int = knob(at_least(1))  # a digit's 8 x 8 pixels become scale x scale blocks
    fragments: int = knob(at_least(0))  # clutter pieces per image
    fragment: int = knob(at_least(1))  # side of a clutter piece, pixels of the upscaled digit it is cut from
    copies: int = knob(at_least(1))  # images made from each source digit (other places, other clutter)
    jitter: int = knob(NON_NEGATIVE)  # the digit's corner lands at most this far from the centred place

    @property
    def digit_side(self) -> int:
        """Side of the upscaled digit, pixels."""
        return 8 * self.scale

    def relations(self) -> Iterator[Violation]:
        if self.digit_side > self.canvas:
            yield "canvas", self.canvas, f">= the upscaled digit's side (8 x scale = {self.digit_side})"
        elif 2 * self.jitter > self.canvas - self.digit_side:
            yield "jitter", self.jitter, (f"<= half the room around the upscaled digit "
                                          f"({(self.canvas - self.digit_side) // 2}: anywhere on the canvas)")
        if self.fragment > self.digit_side:
            yield "fragment", self.fragment, f"<= the upscaled digit's side ({self.digit_side})"


@dataclass(frozen=True)
class ImagesParams(Section):
    """Which real dataset and how it is split (vitheory.images.datasets)."""

    dataset: Literal["digits", "cluttered_digits", "fashion_mnist", "cifar10", "cifar100", "svhn",
                     "imagefolder"] = knob()
    root: str = knob()  # downloads and image folders live under root/<dataset>/
    fashion_mnist_path: str = knob()  # the folder of Fashion-MNIST's four idx files, gzipped or not
    seed: int = knob(NON_NEGATIVE)
    val_fraction: float = knob(Rule(lambda v: 0 < v < 1, "in (0, 1)"))
    test_fraction: float = knob(Rule(lambda v: 0 < v < 1, "in (0, 1)"))  # datasets without a test split
    official_test_fraction: float = knob(OPEN_FRACTION)  # class-balanced share of an official test split kept
    train_fraction: float = knob(OPEN_FRACTION)  # class-balanced share of the training images used
    cluttered: ClutteredParams = knob()  # read when dataset is cluttered_digits


@dataclass(frozen=True)
class ViTPreset(Section):
    """vitheory.images.models.SmallViT, less the data's shape."""

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
    """vitheory.images.models.SmallResNet, less the data's shape."""

    widths: tuple[int, ...] = knob(at_least(1))
    blocks: tuple[int, ...] = knob(at_least(1))

    def relations(self) -> Iterator[Violation]:
        if len(self.blocks) != len(self.widths):
            yield "blocks", list(self.blocks), f"one count per stage ({len(self.widths)} widths)"


@dataclass(frozen=True)
class RealModel:
    """A model train_real trains: the preset section whose class it builds, and its name in the figures
    and the README's accuracy table."""

    preset: type[Section]
    label: str


# The model registry: every model train_real trains, by name. The name is its params key
# real.models.<name>, its runs train_real@<name>-<pixels> and its colour's key
# (vitheory.core.figures.MODEL_COLOURS); dvc.yaml's runs.real_models and the render and report stages'
# deps on its metrics follow this order (tests/images/test_registry.py). docs/LAYOUT.md, "Adding a
# claim, a knob, a model", says how to add one.
REAL_MODELS: dict[str, RealModel] = {
    "vit": RealModel(ViTPreset, "ViT"),
    "vit_positional": RealModel(ViTPreset, "positional-attention ViT"),
    "cnn": RealModel(ResNetPreset, "CNN"),
}
# params.yaml's real.models: one required preset per registered model, in the registry's order
RealModels = make_dataclass("RealModels", [(name, model.preset, knob()) for name, model in REAL_MODELS.items()],
                            bases=(Section,), frozen=True, namespace={"__module__": __name__})


@dataclass(frozen=True)
class CompileParams(Section):
    """Per model kind (a model class's KIND), whether its training step goes through torch.compile:
    faster where it wins, other last bits than eager (docs/PERF.md)."""

    vit: bool = knob()  # SmallViT: vit, vit_positional, and pk_train's vit_gap
    cnn: bool = knob()  # SmallResNet
    alternet: bool = knob()  # pk_train's AlterNet

    @classmethod
    def every_kind(cls, on: bool) -> CompileParams:
        """Every kind compiled (True) or eager (False): the benchmarks' two sides."""
        return cls(**{f.name: on for f in fields(cls)})


@dataclass(frozen=True)
class RecipeParams(Section):
    """The recipe of every real-image training (params.yaml `real` without the model registry and the
    permutation): a stage that trains with it lists these keys (RECIPE_KEYS) and the models it trains, so
    that a model added to the registry reruns no stage but the ones that train or read it."""

    seeds: int = knob(at_least(1))
    epochs: int = knob(at_least(1))
    batch_size: int = knob(at_least(1))
    lr: float = knob(POSITIVE)
    warmup_epochs: int = knob(NON_NEGATIVE)  # linear warmup before the cosine decay
    eval_every: int = knob(at_least(1))  # epochs between the logged held-out evaluations (and the last)
    weight_decay: float = knob(NON_NEGATIVE)
    shift: int = knob(NON_NEGATIVE)  # random translation, pixels
    hflip: bool = knob()
    compile_by_kind: CompileParams = knob()  # torch.compile, one switch per model kind

    @classmethod
    def of(cls, real: Any) -> RecipeParams:
        """The recipe of a stage's view of `real` (which lists RECIPE_KEYS) or of a whole section."""
        return cls(**{f.name: getattr(real, f.name) for f in fields(cls)})


RECIPE_KEYS = tuple(f"real.{f.name}" for f in fields(RecipeParams))


@dataclass(frozen=True)
class RealTrainParams(RecipeParams):
    permutation_seed: int = knob(NON_NEGATIVE)
    permutation_block: int = knob(at_least(1))  # side of the squares the permutation moves (1: pixels)
    models: RealModels = knob()


def dataset_named(data: ImagesParams) -> str:
    """The dataset as the report names it: for the one built here, with the regime its knobs set."""
    if data.dataset == "digits":
        return ("`digits` (scikit-learn's 8 x 8 digits, the quick preset's fast check: 16 tokens, none of them "
                "uninformative, models near ceiling; too small to decide LI-5, PK-1 or PK-6)")
    if data.dataset == "fashion_mnist":
        share = "all" if data.official_test_fraction == 1 else f"a class-balanced {data.official_test_fraction:g}"
        return ("`fashion_mnist` (Zalando Research's Fashion-MNIST: 28 x 28 grey photographs of clothing, shoes "
                f"and bags in 10 classes, the object filling the frame; tested on {share} of its 10,000 official "
                "test images)")
    if data.dataset != "cluttered_digits":
        return f"`{data.dataset}`"
    built = data.cluttered
    side = built.digit_side
    place = "centred on" if built.jitter == 0 else f"at most {built.jitter} px from the centre of"
    return (f"`cluttered_digits` (a digit of {side} x {side} pixels {place} a {built.canvas} x {built.canvas} canvas among "
            f"{built.fragments} fragments of {built.fragment} x {built.fragment} from other digits, {built.copies} "
            "canvases per digit)")


def training_regime(data: ImagesParams, real: RealTrainParams) -> str:
    """The real-image regime the claims on train_real's models run in, for the report."""
    vit = real.models.vit
    return (f"Dataset {dataset_named(data)}, train fraction {data.train_fraction}, val {data.val_fraction}; "
            f"ViT: patch {vit.patch}, depth {vit.depth}, {vit.heads} heads, width {vit.width}, {vit.pool} "
            f"pooling; CNN: widths {list(real.models.cnn.widths)}, blocks {list(real.models.cnn.blocks)}; "
            f"AdamW lr {real.lr}, weight decay {real.weight_decay}, {real.warmup_epochs} warmup epochs then "
            f"cosine, {real.epochs} epochs, "
            f"batch {real.batch_size}, shifts up to {real.shift} px; {real.seeds} seeds.")


# the params.yaml keys the real-image package owns (vitheory.papers), each to its section
SECTIONS = {"images": ImagesParams, "real": RealTrainParams}
