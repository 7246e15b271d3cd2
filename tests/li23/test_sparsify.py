from dataclasses import replace

import pytest
import torch

from vitheory.core.config import as_dict
from vitheory.li23.sparsify import STRATEGIES, removal_mask, remove_tokens, run
from vitheory.li23.tokens import CONFUSION, IRRELEVANT, RELEVANT, generate
from vitheory.params import parse_params

KINDS = (IRRELEVANT, CONFUSION, RELEVANT)


@pytest.fixture(scope="module")
def data(default_params):
    return generate(default_params.sparsify.data)[1]


def _count(data, kind):
    return (data.kind == kind).sum(1)


@pytest.mark.parametrize("strategy,kind", [("irrelevant", IRRELEVANT), ("confusion", CONFUSION),
                                           ("relevant", RELEVANT)])
@pytest.mark.parametrize("keep", [0.75, 0.5, 0.25])
def test_kind_oracles_remove_exactly_their_share_of_their_kind(data, strategy, kind, keep):
    sparse = remove_tokens(data, removal_mask(strategy, data, None, keep, torch.Generator().manual_seed(0)))
    count = int(_count(data, kind)[0])
    assert (_count(sparse, kind) == round(keep * count)).all() and round(keep * count) < count  # removes what it says
    for other in set(KINDS) - {kind}:
        assert torch.equal(_count(sparse, other), _count(data, other))


@pytest.mark.parametrize("strategy", ["noisiest", "random"])
def test_noise_strategies_keep_every_kinds_share(data, strategy):
    """Removing noisy tokens must lower tau without lowering alpha*: every kind loses the same share."""
    sparse = remove_tokens(data, removal_mask(strategy, data, None, 0.5, torch.Generator().manual_seed(0)))
    for kind in KINDS:
        assert (_count(sparse, kind) * 2 == _count(data, kind)).all()


def test_noisiest_go_first_within_each_kind_and_order_is_kept(data):
    removed = removal_mask("noisiest", data, None, 0.5, torch.Generator())
    for kind in KINDS:
        mine = data.kind == kind
        dropped = torch.where(removed & mine, data.noise_norm, torch.inf).min(1).values
        kept = torch.where(~removed & mine, data.noise_norm, -torch.inf).max(1).values
        assert (kept <= dropped).all()
    sparse = remove_tokens(data, removed)
    assert sparse.noise_norm.mean() < data.noise_norm.mean()  # tau falls
    # the kept tokens are a subsequence: X rows of the original, in the original order
    position = (sparse.X[0][:, None, :] == data.X[0][None]).all(-1).float().argmax(1)
    assert (position.diff() > 0).all()


def test_attention_removes_the_least_attended(data):
    received = torch.rand(data.kind.shape, generator=torch.Generator().manual_seed(1))
    removed = removal_mask("attention", data, received, 0.75, torch.Generator())
    lowest = received.argsort(1)[:, :removed[0].sum()]
    assert torch.equal(removed.nonzero()[:, 1].reshape(len(removed), -1), lowest.sort(1).values)


def test_a_keep_ratio_that_splits_a_token_is_refused(default_params):
    raw = as_dict(default_params)
    raw["sparsify"]["keep_ratio"] = [0.3]  # 0.3 x 8 relevant tokens is not whole
    with pytest.raises(ValueError, match=r"sparsify\.keep_ratio = \[0\.3\].*0\.3 x 8 relevant is not whole"):
        parse_params(_as_yaml(raw))


def _as_yaml(node):
    """as_dict output as parse_params reads YAML: tuples as lists."""
    if isinstance(node, dict):
        return {k: _as_yaml(v) for k, v in node.items()}
    if isinstance(node, tuple):
        return [_as_yaml(v) for v in node]
    return node


def test_run_covers_every_strategy_and_ratio(default_params):
    cfg = replace(default_params.sparsify, keep_ratio=(0.5,), seeds=2, steps=10,
                  data=replace(default_params.sparsify.data, n_train=16, n_test=20))
    rows = run(cfg, progress=False)
    assert {(r["strategy"], r["keep_ratio"]) for r in rows} == {("none", 1.0)} | {(s, 0.5) for s in STRATEGIES[1:]}
    assert len(rows) == 2 * len(STRATEGIES)
    assert all(r["kept_tokens"] == cfg.data.n_tokens // 2 for r in rows if r["strategy"] in ("noisiest", "random"))
