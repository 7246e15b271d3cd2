"""[LI23]'s shares pinned exactly on planted records (issue 66 item 7), and LI-3's uniform mass counted on
generated tokens."""

from dataclasses import replace

import pytest
import torch
from verdict_tables import SETTINGS

from vitheory.core.claims import intervals
from vitheory.core.intervals import SETTINGS_GROUP, clopper_pearson
from vitheory.li23.attention import attention_masses, reference_masses
from vitheory.li23.claims import PAPER
from vitheory.li23.phase import SeedRuns, pooled_n_mins
from vitheory.li23.tokens import RELEVANT, generate

LI2 = next(claim for claim in PAPER.claims if claim.id == "LI-2")


def _runs(outcomes: dict[tuple[float, int], list[int]]) -> list[SeedRuns]:
    """Each seed's runs: success and steps to zero test error (-1: never) per (alpha*, N), seed by seed."""
    seeds = len(next(iter(outcomes.values())))
    return [SeedRuns([{"model": "vit", "alpha_star": a, "n_train": n, "seed": s, "test_error": 0.0 if won[s] else 0.1,
                       "steps_to_zero_train_error": 10, "steps_to_zero_test_error": 100 if won[s] else -1,
                       "success": won[s]} for (a, n), won in outcomes.items()]) for s in range(seeds)]


def test_n_mins_share_of_seeds_is_each_cells_successes_over_its_seeds():
    """At alpha* 0.2, 2 of 4 seeds succeed at N = 8 (0.5: enough at threshold 0.5; over 5 it would be 0.4) and
    3 of 4 at N = 16; 1 of 4 at N = 4."""
    units = _runs({(0.2, 4): [1, 0, 0, 0], (0.2, 8): [0, 1, 1, 0], (0.2, 16): [1, 1, 0, 1]})
    assert pooled_n_mins(units, 0.5) == {0.2: 8}
    assert pooled_n_mins(units, 0.75) == {0.2: 16} and pooled_n_mins(units, 0.76) == {0.2: None}
    assert [unit.n_mins(0.5) for unit in units] == [{0.2: 16}, {0.2: 8}, {0.2: None}, {0.2: 16}]  # each seed's own


def test_li2s_least_share_reaching_zero_test_error_and_its_interval_count_every_seed():
    """5 seeds at the largest N: 3, 4 and 5 of them reach zero test error at alpha* 0.1, 0.2, 0.4 (a smaller N
    where none does is not read): the least share 3 / 5, Clopper-Pearson at 3 of 5 seeds."""
    units = _runs({(0.1, 8): [0] * 5, (0.1, 64): [1, 1, 0, 1, 0], (0.2, 8): [0] * 5, (0.2, 64): [1, 1, 1, 0, 1],
                   (0.4, 8): [0] * 5, (0.4, 64): [1] * 5})
    samples = {"vit": units, "cnn": units, SETTINGS_GROUP: [{"success_rate": 0.5, "step_budget": 1000}]}
    assert LI2.statistics(samples)["vit_least_share_reaching_zero_test_error"] == 3 / 5
    found = intervals(LI2, samples, SETTINGS)["vit_least_share_reaching_zero_test_error"]
    assert (found.low, found.high, found.units) == (*clopper_pearson(3, 5, SETTINGS.confidence), {"vit": 5})


@pytest.mark.parametrize("n_tokens,alpha_star", [(10, 0.2), (20, 0.15), (7, 0.3)])
def test_li3s_uniform_mass_is_the_counted_share_of_relevant_tokens_under_uniform_attention(default_params,
                                                                                          n_tokens, alpha_star):
    """reference_masses' uniform value against generated tokens: under attention 1/L on every key a query's
    mass on relevant keys is the example's relevant tokens counted over L."""
    cfg = replace(default_params.generate.li_tokens, n_tokens=n_tokens, alpha_star=alpha_star, n_train=2, n_test=6)
    _, test = generate(cfg)
    counted = (test.kind == RELEVANT).sum(1).float() / n_tokens
    uniform = torch.full((len(test.kind), n_tokens, n_tokens), 1 / n_tokens)
    assert counted.tolist() == pytest.approx([reference_masses(cfg)["uniform"]] * len(counted))
    assert attention_masses(uniform, test.kind)["attn_relevant_query"] == pytest.approx(reference_masses(cfg)["uniform"])
