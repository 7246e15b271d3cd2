"""Typed, validated access to `params.yaml`: the whole file, assembled from the sections each paper
package defines (`vitheory.<paper>.params`) with the loader of `vitheory.core.config`.

`load_params` rejects unknown or missing keys, wrong types and out-of-range values with one
`ParamsError` line that names the key, the value and what is allowed, before any compute.

    python -m vitheory.params [params.yaml]    # check a file, print the error or "ok"
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from vitheory.core.config import NON_NEGATIVE, Rule, Section, Violation, at_least, build, knob
from vitheory.core.errors import ParamsError
from vitheory.images.params import ImagesParams, RealTrainParams
from vitheory.jsl22.params import (
    ControlParams,
    SpatialControlParams,
    SpatialDataParams,
    SpatialTrainParams,
    TransferParams,
)
from vitheory.li23.params import LiTokensParams, LiVitTrainParams, PhaseParams, SparsifyParams, SparsifyRealParams
from vitheory.pk22.params import PKParams, PKTrainParams

DEFAULT_PATH = Path("params.yaml")


@dataclass(frozen=True)
class GenerateParams(Section):
    li_tokens: LiTokensParams = knob()
    spatial: SpatialDataParams = knob()
    spatial_control: SpatialControlParams = knob()


@dataclass(frozen=True)
class TrainParams(Section):
    device: Literal["auto", "cpu", "cuda"] = knob()
    li_vit: LiVitTrainParams = knob()


@dataclass(frozen=True)
class RenderParams(Section):
    dpi: int = knob(at_least(50))
    context: Literal["paper", "notebook", "talk", "poster"] = knob()
    association_threshold: float = knob(Rule(lambda v: -1 <= v <= 1, "in [-1, 1]"))


@dataclass(frozen=True)
class ReportParams(Section):
    confidence: float = knob(Rule(lambda v: 0.5 <= v < 1, "in [0.5, 1)"))
    bootstrap: int = knob(at_least(100))
    seed: int = knob(NON_NEGATIVE)


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
    report: ReportParams = knob()

    def relations(self) -> Iterator[Violation]:
        n_train = self.generate.li_tokens.n_train
        if self.train.li_vit.batch_size > n_train:
            yield "train.li_vit.batch_size", self.train.li_vit.batch_size, (
                f"<= generate.li_tokens.n_train ({n_train})")
        if max(self.transfer.n_train) > self.generate.spatial.n_train:
            yield "transfer.n_train", list(self.transfer.n_train), (
                f"<= generate.spatial.n_train ({self.generate.spatial.n_train}) (every element): scratch "
                "training is compared at sizes the pre-training could have seen")


def parse_params(raw: Any) -> Params:
    """Validate an already-parsed params mapping."""
    return build(Params, raw, "")


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
