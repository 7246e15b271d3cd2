"""Theorem 3.2's constructions (vitheory.jsl22.handbuilt) on a small draw of the spatial data: each attends
to the sets it is built on, P P^T shows them or turns away from them as built, and the readout solves the
task only on the right sets; the Top_C over j != i measure and its chance."""

import math

import pytest
import torch

from vitheory.jsl22.data import partition, sample
from vitheory.jsl22.handbuilt import (away_from_sets, chance_meets_set, constructions, measure, others_meet_set,
                                     set_blocks)
from vitheory.jsl22.params import SpatialDataParams

DATA = SpatialDataParams(seed=0, n_patches=64, set_size=4, partition="blocks", variant_partition="random", dim=32,
                         q=0.2, noise_scale=1.0, n_train=2, n_test=1000)


@pytest.fixture(scope="module")
def measured():
    generator = torch.Generator().manual_seed(0)
    sets = partition(DATA.n_patches, DATA.set_size, "blocks", generator)
    w_star = torch.randn(DATA.dim, generator=generator)
    w_star /= w_star.norm()
    test = sample(DATA.n_test, DATA, sets, w_star, generator)
    models = constructions(sets, w_star, gap=20.0, pos_dim=128, seed=0)  # params.yaml's d_p
    attention = {name: model.attention() for name, model in models.items()}
    return sets, attention, {name: measure(model, test.X, test.y, sets) for name, model in models.items()}, models


def test_the_right_constructions_attend_to_the_sets_and_solve_the_task(measured):
    sets, attention, found, _ = measured
    for name in ("associating", "unassociated"):
        assert torch.allclose(attention[name], set_blocks(sets) / DATA.set_size, atol=1e-3), name  # float32 scores
        assert found[name]["attn_exact"] == 1.0
        assert found[name]["errors"] / found[name]["examples"] < 0.01  # about 0.1% on the pipeline's data


def test_p_p_t_shows_the_sets_only_where_built_to(measured):
    _, _, found, _ = measured
    assert found["associating"]["pos_exact"] == 1.0
    assert found["associating"]["pos_meets_set"] == [1] * DATA.n_patches
    # Theorem 3.2's condition: no patch's Top_C over j != i holds a patch of its set
    assert found["unassociated"]["pos_meets_set"] == [0] * DATA.n_patches
    assert found["unassociated"]["pos_exact"] == 0.0


def test_the_unassociated_gram_matrix_is_realised_and_turns_away_from_the_sets(measured):
    sets, _, _, models = measured
    gram = away_from_sets(sets)
    assert torch.linalg.eigvalsh(gram).min() == pytest.approx(1 / (2 * DATA.set_size))  # positive definite
    P = models["unassociated"].P.detach().double()
    assert torch.allclose(P @ P.T, gram, atol=1e-5)
    assert torch.linalg.matrix_rank(P) == DATA.n_patches  # what lets W_K make the scores the block matrix
    mates = set_blocks(sets).bool() & ~torch.eye(DATA.n_patches, dtype=torch.bool)
    assert gram[mates].max() < gram[~set_blocks(sets).bool()].min()


def test_with_j_equal_to_i_kept_the_largest_encoding_tops_its_own_row(measured):
    """Why Theorem 3.2's Top_C is read over j != i: Cauchy-Schwarz puts the encoding of largest norm first
    in its own row, whatever P, so its Top_C always meets its set."""
    *_, models = measured
    random_P = torch.randn(DATA.n_patches, 128, generator=torch.Generator().manual_seed(1))
    for P in (models["unassociated"].P.detach(), random_P):
        largest = int(P.norm(dim=1).argmax())
        assert int((P @ P.T)[largest].argmax()) == largest


def test_a_random_gram_matrix_meets_the_sets_at_chance():
    """P ~ N(0, 1/d_p), as the unassociated construction drew it before: over j != i its Top_C meets a patch's
    set at chance (1 - binom(60, 4) / binom(63, 4) = 0.181), where with j = i kept every patch met it."""
    generator = torch.Generator().manual_seed(0)
    sets = partition(DATA.n_patches, DATA.set_size, "blocks", generator)
    shares = [others_meet_set(P @ P.T, sets).float().mean() for P in torch.randn(200, DATA.n_patches, 128,
                                                                               generator=generator)]
    assert chance_meets_set(DATA.n_patches, DATA.set_size) == pytest.approx(1 - 487635 / 595665)
    assert float(torch.stack(shares).mean()) == pytest.approx(chance_meets_set(DATA.n_patches, DATA.set_size),
                                                              abs=0.01)


def test_a_wrong_partition_fails_the_task(measured):
    _, _, found, _ = measured
    assert found["wrong_sets"]["own_set_mass"] < 0.5
    assert found["wrong_sets"]["errors"] / found["wrong_sets"]["examples"] > 0.125


def test_the_unassociated_construction_needs_full_row_rank():
    sets = partition(16, 4, "blocks", torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="handbuilt.pos_dim"):
        constructions(sets, torch.ones(8) / math.sqrt(8), gap=20.0, pos_dim=8, seed=0)
