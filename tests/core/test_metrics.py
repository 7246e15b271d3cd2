"""Every 0-1 mistake counts a non-finite output (NaN, +inf, -inf) as wrong (vitheory.core.metrics): a
comparison with NaN is false, so `out * y <= 0` and `argmax == y` took a diverged model's NaN for a right
answer (issue 53). The helpers first, then each family of their callers fed a NaN output."""

from dataclasses import replace

import pytest
import torch
from torch import nn

from vitheory.core.ensemble import Ensemble, loss_and_error
from vitheory.core.metrics import class_mistakes, sign_error_rate, sign_mistakes
from vitheory.images.training import evaluate as evaluate_images
from vitheory.jsl22.handbuilt import constructions, measure
from vitheory.jsl22.training import best_linear_error, training_errors
from vitheory.li23.attention import evaluate as evaluate_tokens
from vitheory.li23.models import ShallowViT
from vitheory.li23.tokens import generate
from vitheory.pk22.noise import noisy_accuracy

NAN, INF = float("nan"), float("inf")


def test_a_non_finite_output_is_a_sign_mistake_whatever_its_sign():
    out = torch.tensor([2.0, -1.0, 0.0, NAN, INF, -INF, NAN])
    y = torch.tensor([1.0, 1.0, 1.0, 1.0, 1.0, -1.0, -1.0])
    # right sign, wrong sign, zero (no side), then NaN and infinities a plain sign test would pass
    assert sign_mistakes(out, y).tolist() == [False, True, True, True, True, True, True]
    assert sign_error_rate(out, y) == pytest.approx(6 / 7)


def test_a_row_with_any_non_finite_logit_is_a_class_mistake():
    logits = torch.tensor([[2.0, 1.0], [0.0, 3.0], [NAN, 5.0], [INF, 0.0], [1.0, -INF], [0.0, 1.0]])
    y = torch.tensor([0, 0, 0, 0, 0, 1])
    # the NaN row's argmax is 0 on this kernel, the +inf row's is: both once counted right
    assert class_mistakes(logits, y).tolist() == [False, True, True, True, True, False]


def _identity() -> nn.Module:
    """A model whose input is its output: the test hands it the outputs to score."""
    return nn.Identity()


def test_the_ensemble_counts_a_member_with_nan_outputs_wrong():
    """loss_and_error: behind every ensemble's error (LI-1, LI-2, LI-4, LI-6, JSL-1 to JSL-4's test_metrics)."""
    ensemble = Ensemble([ShallowViT(dim=16, width=20, qk_init=0.5, out_init_std=0.3) for _ in range(2)])
    X, y = torch.randn(2, 5, 7, 16), torch.tensor([[1.0, -1.0, 1.0, -1.0, 1.0]] * 2)
    X[0] = NAN
    _, error = loss_and_error(ensemble, X, y)
    assert error[0] == 1.0 and error[1] < 1.0


def test_the_token_vit_counts_nan_outputs_wrong(default_params):
    """li23.attention.evaluate: LI-3's train and test error."""
    _, test = generate(default_params.generate.li_tokens)
    ensemble = Ensemble([ShallowViT(dim=test.X.shape[-1], width=20, qk_init=0.5, out_init_std=0.3)])
    nan_inputs = replace(test, X=torch.full_like(test.X, NAN))
    assert evaluate_tokens(ensemble, nan_inputs)[0]["error_rate"] == 1.0


def test_the_spatial_errors_count_nan_outputs_wrong():
    """jsl22: the control's training error, the best linear error and the hand-built transformers' errors."""
    X, y = torch.randn(6, 16, 8), torch.tensor([1, -1, 1, -1, 1, -1])
    assert training_errors([_identity()], torch.full((6,), NAN), y) == [1.0]
    assert best_linear_error(X, y, torch.full((8,), NAN)) == 1.0
    sets = torch.arange(16).reshape(4, 4)
    model = constructions(sets, torch.ones(8) / 8 ** 0.5, gap=20.0, pos_dim=16, seed=0)["associating"]
    with torch.no_grad():
        model.v.fill_(NAN)
    assert measure(model, X, y, sets)["errors"] == len(y)


# rows with a NaN or an infinite logit, whose argmax is the label: half the rows are right
LOGITS, LABELS = torch.tensor([[2.0, 1.0], [NAN, 5.0], [INF, 0.0], [1.0, 2.0]]), torch.tensor([0, 0, 0, 1])


def test_image_accuracies_count_non_finite_logits_wrong():
    """images.training.evaluate: every real-image accuracy (JSL-5, JSL-6, LI-5, PK-1, PK-6, PK-7)."""
    assert evaluate_images(_identity(), LOGITS, LABELS)["accuracy"] == 0.5


def test_noisy_accuracy_counts_non_finite_logits_wrong():
    """pk22.noise.noisy_accuracy: PK-5's accuracy under noise."""
    assert noisy_accuracy(_identity(), LOGITS, LABELS, torch.zeros_like(LOGITS)) == 0.5
