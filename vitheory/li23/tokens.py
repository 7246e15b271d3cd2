"""[LI23] token data: label-relevant, confusion and label-irrelevant tokens (docs/SCIENCE.md section 1).

Li, Wang, Liu, Chen. "A Theoretical Understanding of Shallow Vision Transformers: Learning,
Generalization, and Sample Complexity." ICLR 2023, arXiv 2302.06015.

M orthonormal patterns in R^d: mu+ (row 0), mu- (row 1) and M-2 label-irrelevant patterns. An example
of label y has L tokens in random order: round(alpha* L) carry its class's pattern (label-relevant),
round(alpha# L) carry the other class's pattern (confusion), the rest an irrelevant pattern drawn
uniformly. Every token is its pattern plus noise of norm at most tau, or, for a share of tokens drawn at
random (`noisy_share`), of norm `noisy_radius`: tokens that are mostly noise.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from vitheory.core.artifacts import read_split, write_splits
from vitheory.core.device import orthonormal_rows
from vitheory.li23.params import LiTokensParams

IRRELEVANT, RELEVANT, CONFUSION = 0, 1, 2
KIND_NAMES = {IRRELEVANT: "irrelevant", RELEVANT: "relevant", CONFUSION: "confusion"}
TENSOR_NAMES = ("X", "y", "kind", "noise_norm", "patterns")


@dataclass(frozen=True)
class TokenData:
    """One split. X (N, L, d) float32; y (N,) in {-1, +1}; kind (N, L) int8; noise_norm (N, L)."""

    X: torch.Tensor
    y: torch.Tensor
    kind: torch.Tensor
    noise_norm: torch.Tensor
    patterns: torch.Tensor

    def tensors(self) -> dict[str, torch.Tensor]:
        return {name: getattr(self, name) for name in TENSOR_NAMES}

    def __len__(self) -> int:
        return self.X.shape[0]


def _noise(shape: tuple[int, ...], cfg: LiTokensParams, generator: torch.Generator) -> torch.Tensor:
    direction = torch.randn(*shape, cfg.dim, generator=generator)
    direction = direction / direction.norm(dim=-1, keepdim=True)
    if cfg.noise_dist == "sphere":
        radius = torch.full((*shape, 1), cfg.noise_radius)
    elif cfg.noise_dist == "uniform_radius":
        radius = cfg.noise_radius * torch.rand(*shape, 1, generator=generator)
    else:  # uniform in the ball: P(r <= t) = (t / tau)^d
        radius = cfg.noise_radius * torch.rand(*shape, 1, generator=generator) ** (1.0 / cfg.dim)
    return direction * radius


def sample(n: int, patterns: torch.Tensor, cfg: LiTokensParams, generator: torch.Generator) -> TokenData:
    """Draw n examples with balanced labels (exactly half +1 when n is even)."""
    L, n_rel, n_conf = cfg.n_tokens, cfg.n_relevant, cfg.n_confusion
    y = torch.where(torch.arange(n) % 2 == 0, 1, -1)[torch.randperm(n, generator=generator)]
    own = (y < 0).long()  # pattern index of the example's class: 0 for mu+, 1 for mu-
    # pattern index and kind per token, in canonical order, then shuffled per example
    pattern_idx = torch.empty(n, L, dtype=torch.long)
    pattern_idx[:, :n_rel] = own[:, None]
    pattern_idx[:, n_rel:n_rel + n_conf] = 1 - own[:, None]
    pattern_idx[:, n_rel + n_conf:] = 2 + torch.randint(
        0, cfg.n_patterns - 2, (n, L - n_rel - n_conf), generator=generator)
    kind = torch.full((n, L), IRRELEVANT, dtype=torch.int8)
    kind[:, :n_rel] = RELEVANT
    kind[:, n_rel:n_rel + n_conf] = CONFUSION
    order = torch.argsort(torch.rand(n, L, generator=generator), dim=1)
    pattern_idx, kind = pattern_idx.gather(1, order), kind.gather(1, order)
    noise = _noise((n, L), cfg, generator)
    if cfg.noisy_share > 0:  # drawn only then: data without noisy tokens keeps its bytes
        direction = torch.randn(n, L, cfg.dim, generator=generator)
        noisy = (torch.rand(n, L, generator=generator) < cfg.noisy_share)[..., None]
        noise = torch.where(noisy, direction / direction.norm(dim=-1, keepdim=True) * cfg.noisy_radius, noise)
    return TokenData(X=patterns[pattern_idx] + noise, y=y.to(torch.int8), kind=kind,
                     noise_norm=noise.norm(dim=-1), patterns=patterns)


def generate(cfg: LiTokensParams) -> tuple[TokenData, TokenData]:
    """Train and test splits from one seeded generator: same params, same bytes."""
    generator = torch.Generator().manual_seed(cfg.seed)
    patterns = orthonormal_rows(cfg.n_patterns, cfg.dim, generator)
    return sample(cfg.n_train, patterns, cfg, generator), sample(cfg.n_test, patterns, cfg, generator)


def load_split(folder: str | Path, split: str) -> TokenData:
    """A split written by the generate stage."""
    tensors = read_split(folder, split, TENSOR_NAMES)
    return TokenData(**{name: tensors[name] for name in TENSOR_NAMES})


def write(cfg: LiTokensParams, folder: str | Path) -> None:
    """The generate stage: both splits of `cfg` and their metadata, into `folder`."""
    train, test = generate(cfg)
    meta = {"params": asdict(cfg), "n_relevant": cfg.n_relevant, "n_confusion": cfg.n_confusion,
            "kinds": {str(code): name for code, name in KIND_NAMES.items()},
            "patterns": "rows 0 and 1 are mu+ and mu-, the rest label-irrelevant"}
    write_splits(folder, {"train": train.tensors(), "test": test.tensors()}, meta)
