"""[JSL22] JSL-5: how much of the images' spatial structure a ViT's learned positional encodings hold.

The structure of a token grid is which tokens' contents vary together: `token_correlation` is, for
every pair of tokens, the mean absolute correlation over the training images between a pixel of one
and a pixel of the other. On natural images it falls with the tokens' distance; under a pixel
permutation the pairs that vary together are scattered, and no patch order can undo that, since each
token mixes pixels from all over the image. `structure_score` asks whether the cosine similarity of
the tokens' positional encodings ranks token *pairs* as that correlation does, beyond what each
token's own level explains: both are ranked over pairs, each token's main effect (a_i + a_j, fitted
by least squares) is removed from both, and the score is the correlation of what is left. Without
that removal, most of the target's variance under a permutation is which tokens carry ink, and
encodings that knew only each token's ink level scored 0.70 (docs/IMAGES.md). The removal is
partial (the cosine of such encodings is not additive in ranks), so the null keeps token levels too:
`shuffled_structure` is the score of the same encodings shuffled only among tokens of like level.
The claim reads the score above that null; a positive control, the natural-image ViT, must clear it.
"""

from __future__ import annotations

import numpy as np
import torch

from vitheory.core.device import seeded
from vitheory.core.similarity import cosine_similarity
from vitheory.images.models import patchify
from vitheory.images.recipe import permute_pixels


def token_correlation(x: torch.Tensor, patch: int) -> np.ndarray:
    """(T, T) mean |Pearson correlation| between the pixels of token i and those of token j, over the
    images x (N, C, H, W) as the model sees them (permuted, if so); the diagonal is not used."""
    pixels = patchify(x, patch).double()  # (N, T, p*p*C)
    n, tokens, size = pixels.shape
    flat = pixels.reshape(n, tokens * size)
    centred = flat - flat.mean(0)
    scale = centred.norm(dim=0).clamp_min(1e-12)  # constant pixels (a digit's border) correlate with nothing
    correlation = (centred.T @ centred) / (scale[:, None] * scale[None, :])
    return correlation.abs().reshape(tokens, size, tokens, size).mean(dim=(1, 3)).numpy()


def _pair_residuals(matrix: np.ndarray) -> np.ndarray:
    """The ranks of a symmetric matrix's pairs i < j, less each token's main effect a_i + a_j (and a
    constant), fitted by least squares: what is left is about pairs, not about single tokens."""
    from scipy.stats import rankdata  # noqa: PLC0415 - scipy.stats: a second every training worker would pay

    tokens = len(matrix)
    first, second = np.triu_indices(tokens, k=1)
    ranks = rankdata(matrix[first, second])
    design = np.zeros((len(ranks), tokens + 1))
    design[np.arange(len(ranks)), first] = design[np.arange(len(ranks)), second] = 1
    design[:, tokens] = 1
    effects, *_ = np.linalg.lstsq(design, ranks, rcond=None)
    return ranks - design @ effects


def structure_score(encodings: torch.Tensor, correlation: np.ndarray) -> float:
    """The correlation over token pairs, each token's main effect removed (`_pair_residuals`), between the
    ranks of cos(p_i, p_j) and of the data's token correlation."""
    return float(np.corrcoef(_pair_residuals(cosine_similarity(encodings.double())),
                             _pair_residuals(correlation))[0, 1])


SHUFFLES = 20  # token shuffles of the null, per model
STRATUM = 4  # tokens of like level among which the null shuffles


def shuffled_score(encodings: torch.Tensor, correlation: np.ndarray, seed: int) -> float:
    """The null: the mean structure score of `encodings` shuffled among tokens of like level (strata of
    STRATUM tokens in order of their mean correlation with the others), over SHUFFLES seeded shuffles.
    It keeps what encodings could know of each token alone and destroys which pairs belong together."""
    level = (correlation.sum(axis=1) - np.diag(correlation)) / (len(correlation) - 1)
    strata = np.array_split(np.argsort(level, kind="stable"), max(1, len(level) // STRATUM))
    generator = torch.Generator().manual_seed(seed)
    scores = []
    for _ in range(SHUFFLES):
        order = np.arange(len(level))
        for stratum in strata:
            order[stratum] = stratum[torch.randperm(len(stratum), generator=generator).numpy()]
        scores.append(structure_score(encodings[torch.from_numpy(order)], correlation))
    return float(np.mean(scores))


def structure_scores(model: torch.nn.Module, seed: int, x_train: torch.Tensor,
                     permutation: torch.Tensor | None) -> dict[str, float]:
    """A ViT's structure score, its null (`shuffled_score`, shuffles drawn from the seed) and its
    initialisation's (rebuilt from its seed), against the training images as it saw them (permuted, if
    so); {} for a model without positional encodings."""
    if not hasattr(model, "P"):
        return {}
    correlation = token_correlation(permute_pixels(x_train, permutation), model.patch)
    initial = seeded(seed, lambda: type(model)(**model.config))
    encodings = model.P[-model.n_patches:]
    return {"structure": structure_score(encodings, correlation),
            "shuffled_structure": shuffled_score(encodings, correlation, seed),
            "initial_structure": structure_score(initial.P[-initial.n_patches:], correlation)}
