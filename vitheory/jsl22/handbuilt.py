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
- `unassociated`: the paper's `qk` form with random P (d_p >= D, so P has full row rank) and W_K chosen so
  that (P W_Q)(P W_K)^T is that block matrix while P P^T is a random Gram matrix: the theorem's point, a
  transformer that generalises without P P^T showing the sets.
And a negative control: `wrong_sets`, the associating construction on a random partition of the same
patches, which pools signal patches with random ones and must then err.
"""

from __future__ import annotations

import torch

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


def unassociated(sets: torch.Tensor, w_star: torch.Tensor, gap: float, pos_dim: int,
                 generator: torch.Generator) -> PositionalViT:
    """The `qk` form with P ~ N(0, 1/d_p) (its Gram matrix random) and W_Q = I, W_K^T = P^+ B (P^T)^+
    sqrt(d_p) for the block matrix B = gap x set_blocks, so that the scores P W_K^T P^T / sqrt(d_p) = B."""
    n_patches = sets.numel()
    if pos_dim < n_patches:
        raise ValueError(f"pos_dim = {pos_dim}: the unassociated construction needs d_p >= D = {n_patches} "
                         "(P of full row rank); raise handbuilt.pos_dim")
    model = PositionalViT(n_patches=n_patches, dim=w_star.shape[0], pos_dim=pos_dim, score_form="qk",
                          pos_init_std=1.0, readout_init_std=1.0)
    P = torch.randn(n_patches, pos_dim, generator=generator, dtype=torch.float64) / pos_dim ** 0.5
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


@torch.no_grad()
def measure(model: PositionalViT, X: torch.Tensor, y: torch.Tensor, sets: torch.Tensor) -> dict[str, float | int]:
    """Errors (sign of M(X) against y; 0 counts as an error) on a test set, and Definition 2.2 on P P^T and
    on the attention map the model uses."""
    out, attn = model(X.float(), return_attention=True)
    errors = int(sign_mistakes(out, y.float()).sum())
    positional, attended = association(model.P @ model.P.T, sets), association(attn, sets)
    return {"errors": errors, "examples": len(y), "pos_exact": positional["exact"],
            "attn_exact": attended["exact"], "own_set_mass": float((attn * set_blocks(sets)).sum(1).mean())}
