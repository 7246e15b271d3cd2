from dataclasses import replace

import pytest
import torch

from vitheory.core.device import seeded
from vitheory.core.ensemble import (
    Ensemble,
    EnsembleRecipe,
    Stacked,
    chunk_plan,
    halved,
    loss_and_error,
    train_ensemble,
    train_stable,
)
from vitheory.li23.models import ShallowViT, TokenCNN
from vitheory.li23.tokens import generate

VIT = {"dim": 16, "width": 20, "qk_init": 0.5, "out_init_std": 0.3}
CNN = {"dim": 16, "width": 20, "kernel": 3, "conv_init_std": 1.0, "out_init_std": 0.3}


def _members(default_params, sizes):
    train, _ = generate(default_params.generate.li_tokens)
    return [(train.X[i * 7:i * 7 + n], train.y[i * 7:i * 7 + n]) for i, n in enumerate(sizes)]


def _train(cls, config, sets, seeds, cfg):
    ensemble = Ensemble([seeded(s, lambda: cls(**config)) for s in seeds])
    outcome = train_ensemble(ensemble, Stacked.pad(sets), seeds, cfg, progress=False)
    return ensemble, outcome


def test_members_trained_together_match_members_trained_alone(default_params):
    sets = _members(default_params, [8, 32, 16, 64])
    seeds = [3, 1, 4, 1]
    for cls, config in [(ShallowViT, VIT), (TokenCNN, CNN)]:
        cfg = EnsembleRecipe(steps=60, batch_size=8, lr={"mixing": 2.0, "mlp": 0.5}, eval_every=5,
                        token_fraction=0.75)
        together, outcome = _train(cls, config, sets, seeds, cfg)
        for i, (data, seed) in enumerate(zip(sets, seeds)):
            alone, alone_outcome = _train(cls, config, [data], [seed], cfg)
            for name, stacked in together.params.items():
                torch.testing.assert_close(stacked[i], alone.params[name][0], rtol=1e-5, atol=1e-6)
            assert outcome.steps_run[i] == alone_outcome.steps_run[0]
            assert outcome.steps_to_zero_train_error[i] == alone_outcome.steps_to_zero_train_error[0]


def test_a_member_stops_when_its_loss_is_zero(default_params):
    sets = _members(default_params, [4, 64])
    cfg = EnsembleRecipe(steps=400, batch_size=4, lr={"mixing": 5.0, "mlp": 0.5}, eval_every=10)
    ensemble, outcome = _train(ShallowViT, VIT, sets, [0, 0], cfg)
    loss, _ = loss_and_error(ensemble, Stacked.pad(sets).X, Stacked.pad(sets).y, Stacked.pad(sets).n)
    for i in range(2):
        if outcome.steps_run[i] < cfg.steps:
            assert loss[i] == 0
            assert 0 <= outcome.steps_to_zero_train_error[i] <= outcome.steps_run[i]
    assert outcome.steps_run[0] < cfg.steps  # four examples are fitted quickly


def test_padding_rows_are_never_sampled_or_scored():
    sets = [(torch.randn(3, 5, 16), torch.tensor([1, -1, 1])), (torch.randn(6, 5, 16), torch.ones(6))]
    stacked = Stacked.pad(sets)
    assert stacked.X.shape == (2, 6, 5, 16) and stacked.n.tolist() == [3, 6]
    ensemble = Ensemble([ShallowViT(**VIT), ShallowViT(**VIT)])
    X = stacked.X.clone()
    X[0, 3:] = float("nan")  # padding: a NaN there would show in the loss if it were scored
    loss, error = loss_and_error(ensemble, X, stacked.y, stacked.n)
    assert torch.isfinite(loss).all() and torch.isfinite(error).all()


def test_member_rebuilds_a_plain_model():
    models = [seeded(s, lambda: ShallowViT(**VIT)) for s in (0, 1)]
    ensemble = Ensemble(models)
    x = torch.randn(3, 7, 16)
    rebuilt = ensemble.member(1, ShallowViT(**VIT))
    torch.testing.assert_close(rebuilt(x), models[1](x))
    torch.testing.assert_close(ensemble(torch.stack([x, x]))[1], models[1](x))


def test_chunk_plan_covers_every_member():
    for n in (1, 5, 16, 17, 200):
        chunk, workers = chunk_plan(n, torch.device("cpu"))
        n_chunks = -(-n // chunk)
        assert 1 <= chunk <= 16 and 1 <= workers <= min(n_chunks, torch.multiprocessing.cpu_count())
    assert chunk_plan(300, torch.device("cuda")) == (300, 1)


def test_adam_per_member_matches_torch_adam_alone():
    """Each member of a stack trained with Adam ends where torch.optim.Adam takes it alone."""
    from vitheory.jsl22.models import PatchGLM

    X = torch.randn(64, 4, 3, generator=torch.Generator().manual_seed(0))
    y = torch.sign(X[:, :, 0].sum(1))
    sets = [(X, y), (X[:32], y[:32])]

    def build():
        return PatchGLM(n_patches=4, dim=3, init_std=0.1)

    cfg = EnsembleRecipe(steps=30, batch_size=None, lr={"readout": 0.05}, eval_every=10, loss="logistic",
                    stop_at_zero_loss=False, optimizer="adam")
    together = Ensemble([seeded(seed, build) for seed in (0, 1)])
    train_ensemble(together, Stacked.pad(sets), [0, 1], cfg, progress=False)
    for i, ((x, labels), seed) in enumerate(zip(sets, (0, 1))):
        alone = seeded(seed, build)
        optimizer = torch.optim.Adam(alone.parameters(), lr=0.05)
        for _ in range(30):
            loss = torch.nn.functional.softplus(-labels * alone(x)).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        torch.testing.assert_close(together.params["W"][i], alone.W.detach(), rtol=1e-4, atol=1e-5)


def test_one_input_expanded_over_members_gives_what_copies_give():
    """An input shared by every member (expanded, stride 0) is read once; outputs and gradients match
    those from one copy per member."""
    from vitheory.jsl22.models import MultiHeadViT, PatchGLM, PositionalViT

    x = torch.randn(32, 16, 8, generator=torch.Generator().manual_seed(0))
    builds = [lambda: PatchGLM(n_patches=16, dim=8, init_std=0.3),
              lambda: PositionalViT(n_patches=16, dim=8, pos_dim=8, score_form="qk", pos_init_std=0.3,
                                    readout_init_std=1.0),
              lambda: MultiHeadViT(n_patches=16, dim=8, width=4, heads=2, scores="positions", pos_init_std=0.1,
                                   readout_init_std=0.35)]
    for build in builds:
        ensemble = Ensemble([seeded(seed, build) for seed in (0, 1, 2)])
        shared, copied = x[None].expand(3, *x.shape), x[None].repeat(3, 1, 1, 1)
        assert shared.stride(0) == 0 and copied.stride(0) != 0
        outputs = [ensemble(inputs) for inputs in (shared, copied)]
        torch.testing.assert_close(outputs[0], outputs[1], rtol=1e-5, atol=1e-5 * outputs[1].abs().max().item())
        grads = [torch.autograd.grad(out.pow(2).sum(), list(ensemble.params.values())) for out in outputs]
        for a, b in zip(*grads):  # equal to float32 rounding of the largest entry (cubic outputs)
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5 * b.abs().max().item())


def test_a_model_without_learning_rate_groups_is_refused_in_one_line():
    """train_ensemble's rates are per parameter group (the Member protocol): a plain module is named, not
    trained with a KeyError deep in the step."""
    ensemble = Ensemble([torch.nn.Linear(16, 1)])
    cfg = EnsembleRecipe(steps=1, batch_size=None, lr={"mlp": 0.1}, eval_every=1)
    data = Stacked.pad([(torch.randn(4, 16), torch.ones(4))])
    with pytest.raises(TypeError, match=r"^Linear has no param_group\(name\): [^\n]*Member\)$"):
        train_ensemble(ensemble, data, [0], cfg, progress=False)


class Planted(torch.nn.Module):
    """out = -w^2 x_0, on labels +1: the logistic loss is about w^2 x_0 for large w, so gradient descent multiplies
    w by 1 - 2 lr x_0 a step and diverges exactly when lr x_0 > 1 (|w| doubles at lr x_0 = 1.5 until w^2
    overflows), from w = 10 plus its seed's draw."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(10 + torch.rand(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return -self.w ** 2 * x[:, 0]

    def param_group(self, name: str) -> str:
        return "w"


def _planted(scales, cfg, seeds=(0, 1, 2)):
    """Members whose one input is `scales[i]`: x_0 = 1 diverges at lr 1.5 and not at 0.75, x_0 = 1e30 at every rate,
    x_0 = 0.1 at none."""
    data = Stacked.pad([(torch.full((4, 1), float(scale)), torch.ones(4)) for scale in scales])
    return train_stable(lambda i: seeded(seeds[i], Planted), data, list(seeds), cfg, progress=False)


STABLE = EnsembleRecipe(steps=100, batch_size=None, lr={"w": 1.5}, eval_every=10, loss="logistic",
                        stop_at_zero_loss=False, stop_diverged=True, max_halvings=3)


def test_a_member_diverging_at_the_recipes_rate_trains_again_at_half_the_rate_and_twice_the_steps():
    """Member 0 diverges at lr 1.5 and converges at 0.75: it trains again once and ends as it would trained alone
    at half the rate and twice the steps; member 1 diverges at every rate, halved three times (lr / 8), and stays
    unstable; member 2 never diverges and is what train_ensemble makes of it."""
    ensemble, outcome = _planted([1.0, 1e30, 0.1], STABLE)
    assert outcome.halvings == [1, 3, 0] and outcome.unstable == [False, True, False]
    assert outcome.steps_run[0] == 200 and outcome.steps_run[1] < 800
    alone = Ensemble([seeded(0, Planted)])
    train_ensemble(alone, Stacked.pad([(torch.ones(4, 1), torch.ones(4))]), [0], halved(STABLE), progress=False)
    assert torch.equal(ensemble.params["w"][0], alone.params["w"][0]) and abs(alone.params["w"][0]) < 1
    plain = Ensemble([seeded(2, Planted)])
    train_ensemble(plain, Stacked.pad([(torch.full((4, 1), 0.1), torch.ones(4))]), [2], STABLE, progress=False)
    assert torch.equal(ensemble.params["w"][2], plain.params["w"][0])


def test_no_halving_allowed_leaves_a_diverged_member_unstable_and_the_rule_needs_stopping():
    _, outcome = _planted([1.0, 0.1], replace(STABLE, max_halvings=0), seeds=(0, 1))
    assert outcome.halvings == [0, 0] and outcome.unstable == [True, False]
    with pytest.raises(ValueError, match="needs EnsembleRecipe.stop_diverged"):
        _planted([1.0], replace(STABLE, stop_diverged=False), seeds=(0,))


def test_the_halvings_are_reproducible_to_the_byte():
    runs = [_planted([1.0, 1e30, 0.1], STABLE) for _ in range(2)]
    assert runs[0][1] == runs[1][1]
    assert runs[0][0].params["w"].detach().numpy().tobytes() == runs[1][0].params["w"].detach().numpy().tobytes()


def test_selecting_members_keeps_a_shared_set_one_set():
    X = torch.randn(5, 3)
    shared = Stacked(X[None].expand(4, 5, 3), torch.ones(5)[None].expand(4, -1), torch.full((4,), 5))
    picked = shared.select([1, 3])
    assert picked.X.shape == (2, 5, 3) and picked.X.stride(0) == 0 and picked.n.tolist() == [5, 5]
    padded = Stacked.pad([(X[:2], torch.ones(2)), (X, -torch.ones(5))]).select([1])
    assert torch.equal(padded.X[0], X) and padded.y[0].tolist() == [-1.0] * 5
