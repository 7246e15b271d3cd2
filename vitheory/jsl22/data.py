"""[JSL22] spatially structured data (docs/SCIENCE.md section 2; the paper's Assumption 1), the negative
control of its Figure 2, and the patch-association score of its Definition 2.2.

Jelassi, Sander, Li. "Vision Transformers provably learn spatial structure." NeurIPS 2022,
arXiv 2210.09221.

An image is D patches in R^d on a sqrt(D) x sqrt(D) grid; [D] is split into L sets of C patches.
One set, chosen uniformly, carries the label: its patches are y w* + xi. Every patch of the other
sets is delta w* + xi, delta = +1 or -1 with probability q/2 each, else 0. The noise xi is
N(0, sigma^2 (I - w* w*^T)), orthogonal to w*.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from vitheory.core.artifacts import write_splits
from vitheory.core.device import orthonormal_rows
from vitheory.jsl22.params import SpatialControlParams, SpatialDataParams

SPLIT_TENSORS = ("X", "y", "signal_set")
CONTROL_TENSORS = ("X", "y")


def partition(n_patches: int, set_size: int, kind: str, generator: torch.Generator) -> torch.Tensor:
    """(L, C) patch indices (row-major on the grid) of each set, each row sorted: contiguous
    sqrt(C) x sqrt(C) blocks, or a uniformly random partition."""
    if kind == "blocks":
        grid, side = math.isqrt(n_patches), math.isqrt(set_size)
        rows, cols = torch.meshgrid(torch.arange(grid), torch.arange(grid), indexing="ij")
        block = ((rows // side) * (grid // side) + cols // side).flatten()  # block id of each patch
        return torch.stack([torch.nonzero(block == b).squeeze(1) for b in range(n_patches // set_size)])
    order = torch.randperm(n_patches, generator=generator)
    return order.reshape(-1, set_size).sort(dim=1).values


def set_of_patch(sets: torch.Tensor) -> torch.Tensor:
    """(D,) index of the set each patch belongs to."""
    owner = torch.empty(sets.numel(), dtype=torch.long)
    owner[sets.flatten()] = torch.arange(sets.shape[0]).repeat_interleave(sets.shape[1])
    return owner


@dataclass(frozen=True)
class SpatialData:
    """One split. X (N, D, d) float32; y (N,) int8 in {-1, +1}; signal_set (N,) int64."""

    X: torch.Tensor
    y: torch.Tensor
    signal_set: torch.Tensor

    def tensors(self) -> dict[str, torch.Tensor]:
        return {"X": self.X, "y": self.y, "signal_set": self.signal_set}


def sample(n: int, cfg: SpatialDataParams, sets: torch.Tensor, feature: torch.Tensor,
           generator: torch.Generator) -> SpatialData:
    """n examples of Assumption 1 with feature `feature` (w*) and balanced labels."""
    n_patches, n_sets = cfg.n_patches, sets.shape[0]
    y = torch.where(torch.arange(n) % 2 == 0, 1, -1)[torch.randperm(n, generator=generator)]
    signal_set = torch.randint(0, n_sets, (n,), generator=generator)
    u = torch.rand(n, n_patches, generator=generator)
    delta = torch.where(u < cfg.q / 2, 1.0, torch.where(u < cfg.q, -1.0, 0.0))
    in_signal = set_of_patch(sets)[None, :] == signal_set[:, None]  # (n, D)
    coefficient = torch.where(in_signal, y[:, None].float(), delta)
    noise = torch.randn(n, n_patches, cfg.dim, generator=generator) * math.sqrt(cfg.noise_scale / cfg.dim)
    noise = noise - (noise @ feature)[..., None] * feature  # N(0, sigma^2 (I - w* w*^T))
    X = coefficient[..., None] * feature + noise
    return SpatialData(X=X, y=y.to(torch.int8), signal_set=signal_set)


def orthogonal_feature(feature: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A unit vector orthogonal to `feature` (the downstream w' of the paper's Theorem 5.1)."""
    other = torch.randn(feature.shape[0], generator=generator)
    other = other - (other @ feature) * feature
    return other / other.norm()


def generate(cfg: SpatialDataParams) -> tuple[dict[str, torch.Tensor], SpatialData, SpatialData]:
    """The structure ({"sets", "w_star"}) and train and test splits, from one seeded generator."""
    generator = torch.Generator().manual_seed(cfg.seed)
    sets = partition(cfg.n_patches, cfg.set_size, cfg.partition, generator)
    w_star = orthonormal_rows(1, cfg.dim, generator)[0]
    train = sample(cfg.n_train, cfg, sets, w_star, generator)
    test = sample(cfg.n_test, cfg, sets, w_star, generator)
    return {"sets": sets, "w_star": w_star}, train, test


def labelling_function(X: torch.Tensor, sets: torch.Tensor, w_star: torch.Tensor) -> torch.Tensor:
    """The paper's f*(X) = sum_l Threshold_{0.9 C}(sum_{i in S_l} <w*, X_i>)."""
    per_set = (X @ w_star)[:, sets].sum(dim=-1)  # (N, L)
    return torch.where(per_set.abs() > 0.9 * sets.shape[1], per_set, 0.0).sum(dim=1)


def cnn_teacher(X: torch.Tensor, sets: torch.Tensor, filters: torch.Tensor) -> torch.Tensor:
    """A one-hidden-layer CNN with cubic activation over the sets: filters (r, C, d) give
    f(X) = sum_l sum_r (sum_c <filters[r, c], X_{S_l[c]}>)^3, one filter per position in a set, shared
    across sets as a convolution's are."""
    pre = torch.einsum("nlcd,rcd->nlr", X[:, sets], filters)
    return pre.pow(3).sum(dim=(1, 2))


def generate_control(cfg: SpatialControlParams) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor],
                                                         dict[str, torch.Tensor]]:
    """The structure ({"sets", "filters"}) and train and test splits ({"X", "y"}) of the control:
    i.i.d. N(0, 1) patches labelled by the sign of the teacher CNN."""
    generator = torch.Generator().manual_seed(cfg.seed)
    sets = partition(cfg.n_patches, cfg.set_size, cfg.partition, generator)
    filters = torch.randn(cfg.teacher_width, cfg.set_size, cfg.dim, generator=generator)
    filters /= math.sqrt(cfg.set_size * cfg.dim)

    def split(n: int) -> dict[str, torch.Tensor]:
        X = torch.randn(n, cfg.n_patches, cfg.dim, generator=generator)
        return {"X": X, "y": torch.where(cnn_teacher(X, sets, filters) > 0, 1, -1).to(torch.int8)}

    return {"sets": sets, "filters": filters}, split(cfg.n_train), split(cfg.n_test)


def positive_control_data(control: SpatialControlParams, spatial: SpatialDataParams) -> SpatialDataParams:
    """Assumption 1 at the negative control's size: its patches, sets, dimension, sample sizes and seed,
    with the Assumption-1 data's q and noise. Trained on both, the same student sees the same shapes and
    only the inputs' spatial structure differs, so association the measure reads on this one and not on
    the control is the data's doing. (The variant partition is never drawn here; it is only recorded.)"""
    other = "random" if control.partition == "blocks" else "blocks"
    return SpatialDataParams(seed=control.seed, n_patches=control.n_patches, set_size=control.set_size,
                             partition=control.partition, variant_partition=other, dim=control.dim, q=spatial.q,
                             noise_scale=spatial.noise_scale, n_train=control.n_train, n_test=control.n_test)


def write(cfg: SpatialDataParams, folder: str | Path) -> None:
    """The Assumption 1 data of `cfg` into `folder`: structure, train and test splits, metadata."""
    structure, train, test = generate(cfg)
    agreement = (labelling_function(test.X, structure["sets"], structure["w_star"]) * test.y > 0)
    meta = {"params": asdict(cfg), "f_star_test_agreement": agreement.float().mean().item(),
            "structure": "sets (L, C): patch indices of each set, row-major on the grid; w_star (d,)"}
    write_splits(folder, {"structure": structure, "train": train.tensors(), "test": test.tensors()}, meta)


def write_control(cfg: SpatialControlParams, folder: str | Path) -> None:
    """The negative control of `cfg` into `folder`."""
    structure, train, test = generate_control(cfg)
    meta = {"params": asdict(cfg),
            "structure": "sets (L, C); filters (r, C, d): the teacher CNN's filter per position in a set"}
    write_splits(folder, {"structure": structure, "train": train, "test": test}, meta)


def association(similarity: torch.Tensor, sets: torch.Tensor) -> dict[str, float]:
    """Definition 2.2 on a (D, D) similarity (P P^T or an attention map): for each patch i, its Top_C
    by similarity against its own set. `exact`: share of patches whose Top_C is their set; `overlap`:
    mean share of the Top_C inside the own set."""
    set_size = sets.shape[1]
    top = similarity.topk(set_size, dim=1).indices  # (D, C)
    own = sets.to(similarity.device)[set_of_patch(sets).to(similarity.device)]  # (D, C): each patch's set
    hits = (top[:, :, None] == own[:, None, :]).any(dim=2).float()  # (D, C)
    return {"exact": (hits.sum(1) == set_size).float().mean().item(), "overlap": hits.mean().item()}


def chance_association(n_patches: int, set_size: int) -> dict[str, float]:
    """Expected scores of a Top_C that holds the patch itself and C - 1 others drawn uniformly: what
    an untrained P P^T gives (its diagonal, |p_i|^2, is the largest entry of its row)."""
    others, mates = n_patches - 1, set_size - 1
    exact = 1 / math.comb(others, mates)
    overlap = (1 + mates * mates / others) / set_size
    return {"exact": exact, "overlap": overlap}
