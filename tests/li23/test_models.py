import pytest
import torch

from vitheory.li23.models import ShallowViT

CONFIG = {"dim": 8, "width": 6, "qk_init": 0.5, "out_init_std": 0.3}


def test_shapes_and_attention_rows_sum_to_one():
    model = ShallowViT(**CONFIG)
    x = torch.randn(5, 7, 8)
    out, attn = model(x, return_attention=True)
    assert out.shape == (5,) and attn.shape == (5, 7, 7)
    assert torch.allclose(attn.sum(-1), torch.ones(5, 7))
    assert torch.equal(model(x), out)


def test_readout_is_fixed_at_plus_minus_one_over_m():
    model = ShallowViT(**CONFIG)
    assert sorted(model.a.tolist()) == pytest.approx([-1 / 6] * 3 + [1 / 6] * 3)
    assert "a" not in dict(model.named_parameters())


def test_every_trained_tensor_gets_a_gradient():
    torch.manual_seed(0)
    model = ShallowViT(**CONFIG)
    x = torch.randn(4, 7, 8)
    model(x).pow(2).sum().backward()
    names = {name for name, _ in model.named_parameters()}
    assert names == {"W_Q", "W_K", "W_V", "W_O"}
    for name, param in model.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name
    assert {name: model.param_group(name) for name in names} == {
        "W_Q": "mixing", "W_K": "mixing", "W_V": "mlp", "W_O": "mlp"}
