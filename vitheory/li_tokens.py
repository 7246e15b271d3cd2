"""[LI23] token data: label-relevant, confusion and label-irrelevant tokens (SCIENCE.md section 1).

Li, Wang, Liu, Chen. "A Theoretical Understanding of Shallow Vision Transformers: Learning,
Generalization, and Sample Complexity." ICLR 2023, arXiv 2302.06015.

M orthonormal patterns in R^d: mu+ (row 0), mu- (row 1) and M-2 label-irrelevant patterns. An example
of label y has L tokens in random order: round(alpha* L) carry its class's pattern (label-relevant),
round(alpha# L) carry the other class's pattern (confusion), the rest an irrelevant pattern drawn
uniformly. Every token is its pattern plus noise of norm at most tau.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from vitheory.artifacts import read_json, read_tensors, write_json, write_tensors
from vitheory.params import LiTokensParams

IRRELEVANT, RELEVANT, CONFUSION = 0, 1, 2
KIND_NAMES = {IRRELEVANT: "irrelevant", RELEVANT: "relevant", CONFUSION: "confusion"}
TENSOR_NAMES = ("X", "y", "kind", "noise_norm", "patterns")
STAGE = "generate"


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


def orthonormal_patterns(n_patterns: int, dim: int, generator: torch.Generator) -> torch.Tensor:
    """(M, d) rows of a random orthogonal matrix: orthonormal, in random directions."""
    q, r = torch.linalg.qr(torch.randn(dim, dim, generator=generator, dtype=torch.float64))
    q = q * torch.sign(torch.diagonal(r))  # QR is unique only up to column signs
    return q.T[:n_patterns].float()


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
    return TokenData(X=patterns[pattern_idx] + noise, y=y.to(torch.int8), kind=kind,
                     noise_norm=noise.norm(dim=-1), patterns=patterns)


def generate(cfg: LiTokensParams) -> tuple[TokenData, TokenData]:
    """Train and test splits from one seeded generator: same params, same bytes."""
    generator = torch.Generator().manual_seed(cfg.seed)
    patterns = orthonormal_patterns(cfg.n_patterns, cfg.dim, generator)
    return sample(cfg.n_train, patterns, cfg, generator), sample(cfg.n_test, patterns, cfg, generator)


def save(folder: str | Path, train: TokenData, test: TokenData, meta: dict) -> None:
    folder = Path(folder)
    write_tensors(folder / "train.safetensors", train.tensors())
    write_tensors(folder / "test.safetensors", test.tensors())
    write_json(folder / "meta.json", meta)


def load_split(folder: str | Path, split: str) -> TokenData:
    tensors = read_tensors(Path(folder) / f"{split}.safetensors", STAGE, TENSOR_NAMES)
    return TokenData(**{name: tensors[name] for name in TENSOR_NAMES})


def load_meta(folder: str | Path) -> dict:
    return read_json(Path(folder) / "meta.json", STAGE)
