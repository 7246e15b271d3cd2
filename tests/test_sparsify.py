from dataclasses import replace

import pytest
import torch

from vitheory.li_tokens import CONFUSION, IRRELEVANT, RELEVANT, generate
from vitheory.sparsify import STRATEGIES, removal_order, remove_tokens, run


@pytest.fixture(scope="module")
def data(default_params):
    return generate(default_params.sparsify.data)[1]


@pytest.mark.parametrize("strategy,kind", [("irrelevant", IRRELEVANT), ("confusion", CONFUSION),
                                           ("relevant", RELEVANT)])
def test_kind_oracles_remove_only_their_kind(data, strategy, kind):
    scores, targeted = removal_order(strategy, data, None, torch.Generator().manual_seed(0))
    assert targeted == int((data.kind[0] == kind).sum())
    sparse = remove_tokens(data, scores, targeted // 2)
    removed = (data.kind == kind).sum(1) - (sparse.kind == kind).sum(1)
    assert (removed == targeted // 2).all()
    for other in {IRRELEVANT, CONFUSION, RELEVANT} - {kind}:
        assert torch.equal((sparse.kind == other).sum(1), (data.kind == other).sum(1))


def test_noisiest_go_first_and_order_is_kept(data):
    scores, targeted = removal_order("noisiest", data, None, torch.Generator())
    sparse = remove_tokens(data, scores, 5)
    assert sparse.X.shape[1] == targeted - 5
    assert (sparse.noise_norm.max(1).values <= data.noise_norm.sort(1).values[:, -6] + 1e-6).all()
    # the kept tokens are a subsequence: X rows of the original, in the original order
    position = (sparse.X[0][:, None, :] == data.X[0][None]).all(-1).float().argmax(1)
    assert (position.diff() > 0).all()


def test_attention_removes_the_least_attended(data):
    received = torch.rand(data.kind.shape, generator=torch.Generator().manual_seed(1))
    scores, _ = removal_order("attention", data, received, torch.Generator())
    sparse = remove_tokens(data, scores, 3)
    lowest = received.argsort(1)[:, :3]
    kept_noise = sparse.noise_norm
    for i in range(4):
        for j in lowest[i]:
            assert not (kept_noise[i] == data.noise_norm[i, j]).any()


def test_run_covers_every_strategy_and_ratio(default_params):
    cfg = replace(default_params.sparsify, keep_ratio=(0.5,), seeds=2, steps=10,
                  data=replace(default_params.sparsify.data, n_train=16, n_test=20))
    rows = run(cfg, progress=False)
    assert {(r["strategy"], r["keep_ratio"]) for r in rows} == {("none", 1.0)} | {(s, 0.5) for s in STRATEGIES[1:]}
    assert len(rows) == 2 * len(STRATEGIES)
    assert all(r["kept_tokens"] < cfg.data.n_tokens for r in rows if r["strategy"] in ("noisiest", "random"))
