"""[JSL22]'s shares pinned exactly on planted records (issue 66 item 7), and each closed-form chance a criterion
reads counted by brute force: every Top_C a uniform draw can make, enumerated on a small case."""

import itertools
import math

import pytest
import torch
from verdict_tables import SETTINGS

from vitheory.core.artifacts import write_json
from vitheory.core.claims import intervals
from vitheory.core.intervals import clopper_pearson
from vitheory.core.paths import artifact
from vitheory.jsl22.claims import PAPER, _spatial_samples
from vitheory.jsl22.data import chance_association
from vitheory.jsl22.handbuilt import chance_meets_set, others_meet_set

CLAIMS = {claim.id: claim for claim in PAPER.claims}


@pytest.mark.parametrize("n_patches,set_size", [(4, 2), (8, 2), (9, 3), (16, 4)])
def test_the_chance_of_exact_association_is_the_share_of_every_top_c_draw(n_patches, set_size):
    """JSL-2's and JSL-3's chance: Top_C holds the patch itself and C - 1 of the D - 1 others drawn uniformly;
    over every such draw, the share that is exactly the patch's set, and the mean share of it inside the set."""
    mates, others = set(range(1, set_size)), range(1, n_patches)  # patch 0's set is {0, 1, ..., C - 1}
    draws = list(itertools.combinations(others, set_size - 1))
    exact = sum(set(draw) == mates for draw in draws) / len(draws)
    overlap = sum((1 + len(mates & set(draw))) / set_size for draw in draws) / len(draws)
    assert chance_association(n_patches, set_size) == pytest.approx({"exact": exact, "overlap": overlap}, abs=1e-12)


@pytest.mark.parametrize("n_patches,set_size", [(4, 2), (8, 2), (9, 3), (16, 4)])
def test_the_chance_of_meeting_a_set_is_the_share_of_every_top_c_over_the_others_that_meets_it(n_patches, set_size):
    """JSL-7's chance: for patch 0, every C-subset of the D - 1 others made its Top_C over j != i (those patches
    most similar, itself most of all, which the measure must skip), read by the measure JSL-7 uses."""
    sets = torch.arange(n_patches).reshape(-1, set_size)  # patch 0's set is {0, 1, ..., C - 1}
    met = []
    for draw in itertools.combinations(range(1, n_patches), set_size):
        similarity = torch.zeros(n_patches, n_patches)
        similarity[0, 0] = 2.0
        similarity[0, list(draw)] = 1.0
        met.append(bool(others_meet_set(similarity, sets)[0]))
    assert len(met) == math.comb(n_patches - 1, set_size)
    assert chance_meets_set(n_patches, set_size) == pytest.approx(sum(met) / len(met), abs=1e-12)


def _spatial_metrics(root, final_exact, unstable, chance):
    """train_spatial's metrics with the ViT's seeds as given (the same for every score form and partition)."""
    units = [{"error_rate": 0.02, "attn_exact": exact, "attn_overlap": exact, "pos_exact": exact,
              "pos_overlap": exact, "loss": 0.1} for exact in final_exact]
    vit = {"final": units, "initial": [unit | {"attn_exact": 0.0} for unit in units], "unstable": unstable,
           "halvings": [3 * u for u in unstable]}
    runs = {"vit": vit, "glm": [{"error_rate": 0.16}] * len(units)}
    write_json(root / artifact("spatial_metrics"), {
        "runs": runs, "score_form": "ppt", "best_linear_error": 0.14, "chance": chance,
        "variant": {"runs": runs, "best_linear_error": 0.14}})


def test_jsl2s_share_of_seeds_counts_every_stable_seed_and_its_interval_is_made_of_that_count(tmp_path):
    """7 seeds: 3 meet Definition 2.2, one misses it by one patch of 64 (not rounded up), one unstable with an
    exact map (neither meeting nor not: out of the denominator): 3 / 6, Clopper-Pearson at 3 of 6."""
    _spatial_metrics(tmp_path, [1.0, 1.0, 63 / 64, 1.0, 0.5, 1.0, 0.0],
                     [False, False, False, False, False, True, False], {"exact": 1 / 455, "overlap": 0.3})
    samples = _spatial_samples()(tmp_path)
    measured = CLAIMS["JSL-2"].statistics(samples)
    assert measured["seeds_meeting_definition"] == 3 / 6 and measured["unstable_seeds"] == 1 / 7
    assert measured["initial_exact_minus_chance"] == -1 / 455
    found = intervals(CLAIMS["JSL-2"], samples, SETTINGS)["seeds_meeting_definition"]
    assert (found.low, found.high, found.units) == (*clopper_pearson(3, 6, SETTINGS.confidence), {"vit": 6})


def test_jsl7s_test_errors_and_meeting_share_count_every_example_and_patch(tmp_path):
    """handbuilt's counts as written: 3 errors in 2,001 examples, 1 in 2,001, 350 in 2,001; 13 of 64 patches
    meeting their set; each share's interval made of that count of those units."""
    meets = [1] * 13 + [0] * 51
    built = {name: {"errors": errors, "examples": 2001, "pos_meets_set": meets, "pos_exact": 0.0, "attn_exact": 1.0,
                    "own_set_mass": 0.9} for name, errors in (("associating", 3), ("unassociated", 1),
                                                             ("wrong_sets", 350))}
    write_json(tmp_path / artifact("handbuilt_metrics"), {"models": built, "chance_meets_set": 0.18})
    write_json(tmp_path / artifact("spatial_metrics"), {"runs": {"glm": [{"error_rate": e} for e in (0.2, 0.1, 0.16)]}})
    samples = CLAIMS["JSL-7"].samples(tmp_path)
    measured = CLAIMS["JSL-7"].statistics(samples)
    assert (measured["associating_test_error"], measured["unassociated_test_error"],
            measured["wrong_sets_test_error"], measured["glm_test_error"]) == (3 / 2001, 1 / 2001, 350 / 2001, 0.16)
    assert measured["unassociated_meets_set"] == 13 / 64
    assert measured["unassociated_meets_set_minus_chance"] == pytest.approx(13 / 64 - 0.18, abs=1e-15)
    found = intervals(CLAIMS["JSL-7"], samples, SETTINGS)
    for quantity, errors, group in (("associating_test_error", 3, "associating"),
                                    ("unassociated_test_error", 1, "unassociated"),
                                    ("wrong_sets_test_error", 350, "wrong_sets")):
        assert (found[quantity].low, found[quantity].high, found[quantity].units) == (
            *clopper_pearson(errors, 2001, SETTINGS.confidence), {group: 2001})
