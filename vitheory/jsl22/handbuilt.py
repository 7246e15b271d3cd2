"""[JSL22] Theorem 3.2: a one-layer transformer that solves the task, written down rather than trained.

The model is the positional-attention ViT (vitheory.jsl22.models.PositionalViT) with its weights set by
hand. The readout is v = w*: noise is orthogonal to w*, so <v, X_j> is the patch's coefficient (y in the
signal set, delta in {-1, 0, +1} elsewhere). Attention that spreads each patch's mass evenly over its own
set makes row i of S X v the mean coefficient of i's set: y on the signal set, and on a random set a mean
of C deltas, whose cube is small unless most of them agree. So M(X) = C sum_l (mean_l)^3 is C y plus C
times a sum of small cubes, and errs only when enough random sets line up against y.

Two constructions, both attending to each patch's own set:
- `associating`: the `ppt` form, P = sqrt(gap sqrt(d_p)) times the one-hot of each patch's set, so P P^T
  is itself the sets' block matrix (Definition 2.2 holds on P).
- `unassociated`: the paper's `qk` form with P built so that its Gram matrix turns away from the sets:
  <p_i, p_j> is -1/(2C) for j in i's set and +1/(2C) for j in any other (|p_i| = 1), so the Top_C of row
  i over j != i holds no patch of i's set, Theorem 3.2's condition; P has full row rank (d_p >= D), and
  W_K is chosen so that (P W_Q)(P W_K)^T is still the block matrix. The theorem's point: a transformer
  that generalises although P P^T shows no set. Its condition cannot hold with j = i kept: the encoding
  of largest norm has <p_i, p_i> = |p_i|^2 >= |p_i| |p_j| >= <p_i, p_j> (Cauchy-Schwarz), so, but for
  ties, it tops its own row and its Top_C meets its own set.
And a negative control: `wrong_sets`, the associating construction on a random partition of the same
patches, which pools signal patches with random ones and must then err.
"""

from __future__ import annotations

import math

import torch

from vitheory.core.device import orthonormal_rows
from vitheory.core.metrics import sign_mistakes
from vitheory.jsl22.data import association, partition, set_of_patch
from vitheory.jsl22.models import PositionalViT

CONSTRUCTIONS = ("associating", "unassociated", "wrong_sets")


def set_blocks(sets: torch.Tensor) -> torch.Tensor:
    """(D, D): 1 where two patches share a set, else 0."""
    owner = set_of_patch(sets)
    return (owner[:, None] == owner[None, :]).float()


def associating(sets: torch.Tensor, w_star: torch.Tensor, gap: float) -> PositionalViT:
    """The `ppt` form whose P P^T / sqrt(d_p) is `gap` on the own set and 0 elsewhere (d_p = L sets)."""
    n_sets = sets.shape[0]
    model = PositionalViT(n_patches=sets.numel(), dim=w_star.shape[0], pos_dim=n_sets, score_form="ppt",
                          pos_init_std=1.0, readout_init_std=1.0)
    one_hot = torch.nn.functional.one_hot(set_of_patch(sets), n_sets).float()
    with torch.no_grad():
        model.P.copy_(one_hot * (gap * n_sets ** 0.5) ** 0.5)
        model.v.copy_(w_star)
    return model


def away_from_sets(sets: torch.Tensor) -> torch.Tensor:
    """(D, D) float64 Gram matrix: 1 on the diagonal, -a within a set, +a across sets, a = 1/(2C). Positive
    definite: its eigenvalues are 1 + a (within-set contrasts), 1 - a (2C - 1) = 1/(2C) (contrasts between
    sets) and 1 - a (2C - 1) + a D (the mean)."""
    tilt = 1 / (2 * sets.shape[1])
    blocks = set_blocks(sets).double()
    return (1 + tilt) * torch.eye(sets.numel(), dtype=torch.float64) - 2 * tilt * blocks + tilt


def unassociated(sets: torch.Tensor, w_star: torch.Tensor, gap: float, pos_dim: int,
                 generator: torch.Generator) -> PositionalViT:
    """The `qk` form with P = L Q (L L^T = `away_from_sets`, Q random orthonormal rows, so P P^T is that
    Gram matrix and P has full row rank) and W_Q = I, W_K^T = P^+ B (P^T)^+ sqrt(d_p) for the block matrix
    B = gap x set_blocks, so that the scores P W_K^T P^T / sqrt(d_p) = B."""
    n_patches = sets.numel()
    if pos_dim < n_patches:
        raise ValueError(f"pos_dim = {pos_dim}: the unassociated construction needs d_p >= D = {n_patches} "
                         "(P of full row rank); raise handbuilt.pos_dim")
    model = PositionalViT(n_patches=n_patches, dim=w_star.shape[0], pos_dim=pos_dim, score_form="qk",
                          pos_init_std=1.0, readout_init_std=1.0)
    P = torch.linalg.cholesky(away_from_sets(sets)) @ orthonormal_rows(n_patches, pos_dim, generator).double()
    inverse = torch.linalg.pinv(P)  # (d_p, D), P P^+ = I
    blocks = gap * set_blocks(sets).double()
    with torch.no_grad():
        model.P.copy_(P.float())
        model.W_Q.copy_(torch.eye(pos_dim))
        model.W_K.copy_((inverse @ blocks @ inverse.T * pos_dim ** 0.5).T.float())
        model.v.copy_(w_star)
    return model


def constructions(sets: torch.Tensor, w_star: torch.Tensor, gap: float, pos_dim: int, seed: int
                  ) -> dict[str, PositionalViT]:
    """Every construction of `CONSTRUCTIONS`; `seed` draws the unassociated P and the wrong partition."""
    generator = torch.Generator().manual_seed(seed)
    n_patches, set_size = sets.numel(), sets.shape[1]
    wrong = partition(n_patches, set_size, "random", generator)
    return {"associating": associating(sets, w_star, gap),
            "unassociated": unassociated(sets, w_star, gap, pos_dim, generator),
            "wrong_sets": associating(wrong, w_star, gap)}


def others_meet_set(similarity: torch.Tensor, sets: torch.Tensor) -> torch.Tensor:
    """(D,) whether patch i's Top_C by similarity over the other patches (j != i) holds a patch of its own set:
    the negation of Theorem 3.2's condition, patch by patch."""
    others = similarity.masked_fill(torch.eye(len(similarity), dtype=torch.bool), -math.inf)
    owner = set_of_patch(sets)
    return (owner[others.topk(sets.shape[1], dim=1).indices] == owner[:, None]).any(dim=1)


def chance_meets_set(n_patches: int, set_size: int) -> float:
    """The chance of `others_meet_set` for a Top_C drawn uniformly from the D - 1 other patches: that it holds at
    least one of the C - 1 mates, 1 - binom(D - C, C) / binom(D - 1, C) (hypergeometric)."""
    return 1 - math.comb(n_patches - set_size, set_size) / math.comb(n_patches - 1, set_size)


@torch.no_grad()
def measure(model: PositionalViT, X: torch.Tensor, y: torch.Tensor, sets: torch.Tensor
            ) -> dict[str, float | int | list[int]]:
    """Errors (sign of M(X) against y; 0 counts as an error) on a test set; Definition 2.2 on P P^T and on
    the attention map the model uses; and, patch by patch, whether P P^T's Top_C over j != i meets the
    patch's set (`pos_meets_set`, 0 or 1)."""
    out, attn = model(X.float(), return_attention=True)
    errors = int(sign_mistakes(out, y.float()).sum())
    gram = model.P @ model.P.T
    positional, attended = association(gram, sets), association(attn, sets)
    return {"errors": errors, "examples": len(y), "pos_exact": positional["exact"],
            "attn_exact": attended["exact"], "own_set_mass": float((attn * set_blocks(sets)).sum(1).mean()),
            "pos_meets_set": others_meet_set(gram, sets).int().tolist()}
