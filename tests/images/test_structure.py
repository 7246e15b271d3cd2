"""JSL-5's structure score: the pixel correlation between tokens, and how well positional encodings track it."""

from functools import partial

import numpy as np
import torch
from conftest import ROOT

from vitheory.core.device import seeded
from vitheory.images.structure import shuffled_score, structure_score, structure_scores, token_correlation
from vitheory.images.recipe import permute_pixels
from vitheory.images.training import build_model, pixel_permutation
from vitheory.params import load_params

PARAMS = load_params(ROOT / "params.yaml")


def smooth_images(n: int = 400, size: int = 8) -> torch.Tensor:
    """Random images blurred along both axes: nearby pixels correlate, distant ones hardly."""
    x = torch.randn(n, 1, size + 4, size + 4, generator=torch.Generator().manual_seed(0))
    kernel = torch.ones(1, 1, 5, 5) / 25
    return torch.nn.functional.conv2d(x, kernel)


def grid_distance(side: int) -> np.ndarray:
    rows, cols = np.divmod(np.arange(side * side), side)
    return np.hypot(rows[:, None] - rows[None, :], cols[:, None] - cols[None, :])


def test_token_correlation_falls_with_distance_on_smooth_images_and_not_after_a_pixel_permutation():
    x = smooth_images()
    distance = grid_distance(4)
    upper = np.triu_indices(16, k=1)
    natural = token_correlation(x, 2)
    assert natural.shape == (16, 16) and np.allclose(natural, natural.T)
    assert np.corrcoef(natural[upper], distance[upper])[0, 1] < -0.8
    permuted = token_correlation(permute_pixels(x, pixel_permutation(8, 8, 1, seed=0)), 2)
    assert abs(np.corrcoef(permuted[upper], distance[upper])[0, 1]) < 0.3


def test_structure_score_is_one_for_encodings_that_rank_pairs_as_the_data_does_and_near_zero_for_random_ones():
    correlation = token_correlation(smooth_images(), 2)
    # encodings whose Gram matrix is the correlation's positive part: their cosines rank pairs as it does
    values, vectors = np.linalg.eigh(correlation)
    faithful = torch.tensor(vectors * np.sqrt(np.clip(values, 0, None)))
    assert structure_score(faithful, correlation) > 0.8
    scores = [structure_score(torch.randn(16, 64, generator=torch.Generator().manual_seed(s)), correlation)
              for s in range(20)]
    assert abs(np.mean(scores)) < 0.1
    assert structure_score(faithful, -correlation) < -0.8  # the score can fail, not only pass


def test_structure_scores_rebuild_the_initialisation_from_the_seed_and_skip_models_without_positions():
    x = smooth_images(64)
    build = partial(build_model, PARAMS.real.models.vit, 8, 1, 10)
    model = seeded(3, build)
    with torch.no_grad():
        model.P.add_(torch.randn(model.P.shape, generator=torch.Generator().manual_seed(1)))  # "trained"
    scores = structure_scores(model, 3, x, None)
    initial = seeded(3, build)
    assert scores["initial_structure"] == structure_score(initial.P[1:], token_correlation(x, 2))
    assert scores["structure"] == structure_score(model.P[1:], token_correlation(x, 2))
    assert scores["structure"] != scores["initial_structure"]
    assert abs(scores["shuffled_structure"]) < 0.1  # "trained" encodings of random noise: the null's level
    assert structure_scores(build_model(PARAMS.real.models.cnn, 8, 1, 10), 0, x, None) == {}


def test_the_null_of_shuffled_encodings_separates_from_learned_structure():
    correlation = token_correlation(smooth_images(), 2)
    values, vectors = np.linalg.eigh(correlation)
    faithful = torch.tensor(vectors * np.sqrt(np.clip(values, 0, None)))
    # the positive control: encodings that rank pairs as the data do sit far above their own shuffles
    assert structure_score(faithful, correlation) - shuffled_score(faithful, correlation, 0) > 0.7
    # no structure: random encodings sit on their null, whatever the data
    gaps = [structure_score(e, correlation) - shuffled_score(e, correlation, s)
            for s, e in enumerate(torch.randn(20, 16, 64, generator=torch.Generator().manual_seed(0)))]
    assert abs(np.mean(gaps)) < 0.05


def test_encodings_that_know_only_each_tokens_level_barely_clear_the_null_on_permuted_digits():
    """Under a pixel permutation most of the token correlation's variance is each token's own level (how
    much ink it sees). Encodings that hold only that level (and noise) scored 0.70 by a plain rank
    correlation of the pairs; the score, each token's main effect removed, and its null, shuffles among
    tokens of like level, leave them almost nothing, where encodings of the pairwise structure clear it."""
    from scipy.stats import spearmanr

    from vitheory.core.similarity import cosine_similarity
    from vitheory.images.datasets import read_digits

    digits = read_digits().train.X.float().permute(0, 3, 1, 2)[:1000]
    permuted = permute_pixels((digits - digits.mean()) / digits.std(), pixel_permutation(8, 8, 1, seed=0))
    correlation = token_correlation(permuted, 2)
    level = torch.tensor((correlation.sum(1) - np.diag(correlation)) / 15).float()
    generator = torch.Generator().manual_seed(0)
    level_only = (level - level.min())[:, None] * torch.randn(64, generator=generator) * 10 + \
        0.5 * torch.randn(16, 64, generator=generator)
    upper = np.triu_indices(16, k=1)
    assert spearmanr(cosine_similarity(level_only.double())[upper], correlation[upper]).statistic > 0.6
    assert structure_score(level_only, correlation) - shuffled_score(level_only, correlation, 0) < 0.15
    values, vectors = np.linalg.eigh(correlation)
    faithful = torch.tensor(vectors * np.sqrt(np.clip(values, 0, None)))
    assert structure_score(faithful, correlation) - shuffled_score(faithful, correlation, 0) > 0.7
