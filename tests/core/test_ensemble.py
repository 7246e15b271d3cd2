import pytest
import torch

from vitheory.core.device import seeded
from vitheory.core.ensemble import Ensemble, EnsembleRecipe, Stacked, chunk_plan, loss_and_error, train_ensemble
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
