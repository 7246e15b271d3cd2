"""Theorem 3.2's constructions (vitheory.jsl22.handbuilt) on a small draw of the spatial data: each attends
to the sets it is built on, P P^T shows them or not as built, and the readout solves the task only on the
right sets."""

import math

import pytest
import torch

from vitheory.jsl22.data import partition, sample
from vitheory.jsl22.handbuilt import constructions, measure, set_blocks
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
    return sets, attention, {name: measure(model, test.X, test.y, sets) for name, model in models.items()}


def test_the_right_constructions_attend_to_the_sets_and_solve_the_task(measured):
    sets, attention, found = measured
    for name in ("associating", "unassociated"):
        assert torch.allclose(attention[name], set_blocks(sets) / DATA.set_size, atol=1e-3), name  # float32 scores
        assert found[name]["attn_exact"] == 1.0
        assert found[name]["errors"] / found[name]["examples"] < 0.01  # about 0.1% on the pipeline's data


def test_p_p_t_shows_the_sets_only_where_built_to(measured):
    _, _, found = measured
    assert found["associating"]["pos_exact"] == 1.0
    assert found["unassociated"]["pos_exact"] <= 0.1  # chance is 1 / C(63, 3): a random Gram matrix


def test_a_wrong_partition_fails_the_task(measured):
    _, _, found = measured
    assert found["wrong_sets"]["own_set_mass"] < 0.5
    assert found["wrong_sets"]["errors"] / found["wrong_sets"]["examples"] > 0.125


def test_the_unassociated_construction_needs_full_row_rank():
    sets = partition(16, 4, "blocks", torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="handbuilt.pos_dim"):
        constructions(sets, torch.ones(8) / math.sqrt(8), gap=20.0, pos_dim=8, seed=0)
