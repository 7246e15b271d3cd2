"""[JSL22] JSL-5: how much of the images' spatial structure a ViT's learned positional encodings hold.

The structure of a token grid is which tokens' contents vary together: `token_correlation` is, for
every pair of tokens, the mean absolute correlation over the training images between a pixel of one
and a pixel of the other. On natural images it falls with the tokens' distance; under a pixel
permutation the pairs that vary together are scattered, and no patch order can undo that, since each
token mixes pixels from all over the image. `structure_score` is Spearman's rank correlation, over
token pairs, between that and the cosine similarity of the tokens' positional encodings: about 0 at
initialisation, high once the encodings have learned which tokens belong together. Its null is the
same encodings with their tokens shuffled (`shuffled_structure`): what the score gives for encodings of
the same norms and similarities assigned to tokens at random, on the same images, so that ink falling
on some tokens more than others cannot pass for learned structure.
"""

from __future__ import annotations

import numpy as np
import torch

from vitheory.core.device import seeded
from vitheory.core.similarity import cosine_similarity
from vitheory.images.models import patchify
from vitheory.images.training import permute_pixels


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


def structure_score(encodings: torch.Tensor, correlation: np.ndarray) -> float:
    """Spearman's rho over token pairs i < j between cos(p_i, p_j) and the data's token correlation."""
    similarity = cosine_similarity(encodings.double())
    upper = np.triu_indices(len(similarity), k=1)
    # imported here: scipy.stats takes a second to import, which every training worker process would pay
    from scipy.stats import spearmanr  # noqa: PLC0415

    return float(spearmanr(similarity[upper], correlation[upper]).statistic)


SHUFFLES = 20  # token shuffles of the null, per model


def shuffled_score(encodings: torch.Tensor, correlation: np.ndarray, seed: int) -> float:
    """The null: the mean structure score of `encodings` with their token order shuffled, over SHUFFLES
    seeded shuffles."""
    generator = torch.Generator().manual_seed(seed)
    return float(np.mean([structure_score(encodings[torch.randperm(len(encodings), generator=generator)], correlation)
                          for _ in range(SHUFFLES)]))


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
