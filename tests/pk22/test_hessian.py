"""[PK22]'s Hessian helpers on spectra known in advance: explicit matrices and a 63-parameter network
whose dense Hessian takes a second (the dense comparisons on the image models in test_pk.py take a
minute each, too slow for the mutation run, docs/MUTATION.md)."""

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from conftest import ROOT
from scipy.sparse.linalg import LinearOperator, aslinearoperator
from torch import nn
from torch.func import functional_call

from vitheory.core.errors import ParamsError
from vitheory.images.recipe import augment
from vitheory.params import load_params
from vitheory.pk22.hessian import (
    extreme_eigenvalues,
    hessian_operator,
    hessian_rows,
    negative_curvature_share,
    nll_and_l2,
    quadrature,
    spectral_density,
    top_eigenpairs,
)
from vitheory.pk22.params import PKParams

PARAMS = load_params(ROOT / "params.yaml")
# 30 eigenvalues: the largest in magnitude negative, the most positive second, a bulk of small ones
SPECTRUM = np.r_[[-5.0, 4.0, 3.0], np.linspace(-0.5, 0.9, 27)]


def rotated(spectrum: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A symmetric matrix with this spectrum, and its eigenvectors as columns (in the spectrum's order)."""
    basis, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((len(spectrum), len(spectrum))))
    return basis @ np.diag(spectrum) @ basis.T, basis


def test_top_eigenpairs_are_the_largest_in_magnitude_whatever_their_sign():
    matrix, basis = rotated(SPECTRUM)
    values, vectors = top_eigenpairs(aslinearoperator(matrix), 2, np.random.default_rng(0), tol=1e-10)
    assert values.tolist() == pytest.approx([-5.0, 4.0])  # ascending; the algebraically largest are 4 and 3
    assert np.allclose(np.abs(vectors.T @ basis[:, :2]), np.eye(2), atol=1e-6)  # unit, each to its own value
    assert extreme_eigenvalues(aslinearoperator(matrix), np.random.default_rng(0), tol=1e-10) == pytest.approx((-5, 4))


def test_both_ends_repeat_to_the_bit_when_lanczos_draws_restart_vectors():
    """lambda_min of diag(0.5, 1, 2, 0 x 97) lies in the null space, a rounding-level number that ARPACK
    reaches through restart vectors: drawn from the OS's entropy (eigsh without `rng`), 10 runs gave 10
    different byte strings; drawn from the seeded generator, one."""
    operator = aslinearoperator(np.diag(np.r_[[0.5, 1.0, 2.0], np.zeros(97)]))
    runs = {np.array(extreme_eigenvalues(operator, np.random.default_rng(0), tol=1e-4)).tobytes() for _ in range(10)}
    assert len(runs) == 1
    assert extreme_eigenvalues(operator, np.random.default_rng(0), tol=1e-4) == pytest.approx((0.0, 2.0))


def test_the_tolerance_reaches_lanczos():
    """pk.hessian_tol is what keeps each Hessian's cost down: left out, eigsh works to machine precision
    (its default tol=0), and every accuracy test still passes, but on this spectrum it takes 2.4 (top 5)
    and 3.3 (both ends) times the products."""
    def products(tol: float, find: Callable[..., object]) -> int:
        count = [0]

        def matvec(v: np.ndarray) -> np.ndarray:
            count[0] += 1
            return spectrum * np.ravel(v)

        find(LinearOperator((50, 50), matvec=matvec, dtype=np.float64), np.random.default_rng(0), tol)
        return count[0]

    spectrum = np.linspace(-1.0, 2.0, 50)
    for find in (lambda op, rng, tol: top_eigenpairs(op, 5, rng, tol), extreme_eigenvalues):
        assert products(1e-4, find) < products(0.0, find)


class TinyNet(nn.Module):
    """16 pixels -> 3 tanh units -> 3 classes (63 trained parameters), a dropout that only eval mode
    switches off, and a frozen scale that is no parameter of the Hessian."""

    def __init__(self):
        super().__init__()
        self.hidden, self.out, self.drop = nn.Linear(16, 3), nn.Linear(3, 3), nn.Dropout(0.5)
        self.scale = nn.Parameter(torch.tensor(1.5), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.drop(torch.tanh(self.scale * self.hidden(x.flatten(1)))))


def dense_hessian(model: nn.Module, x: torch.Tensor, y: torch.Tensor, weight_decay: float) -> np.ndarray:
    """Cross-entropy plus (weight_decay / 2) |theta|^2, differentiated twice over the trained parameters."""
    model.eval()
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    sizes = [p.numel() for _, p in named]

    def loss(flat: torch.Tensor) -> torch.Tensor:
        theta = {n: c.reshape(p.shape) for (n, p), c in zip(named, flat.split(sizes))}
        return F.cross_entropy(functional_call(model, theta, (x,)), y) + weight_decay / 2 * flat.pow(2).sum()

    return torch.autograd.functional.hessian(loss, torch.cat([p.detach().flatten() for _, p in named])).numpy()


def _net_and_data(n: int = 12) -> tuple[TinyNet, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    model = TinyNet().double().train()  # hessian_operator must switch the dropout off itself
    return model, torch.randn(n, 1, 4, 4, dtype=torch.float64), torch.arange(n) % 3


def test_hessian_vector_products_are_the_dense_hessians():
    model, x, y = _net_and_data()
    for weight_decay in (0.0, 0.3):
        dense = dense_hessian(model, x, y, weight_decay)
        model.train()
        operator = hessian_operator(model, nll_and_l2(weight_decay), x, y)
        assert operator.shape == (63, 63)
        probes = np.random.default_rng(1).standard_normal((63, 3))
        # two products in a row: the gradient's graph is kept between them
        assert np.allclose(operator.matmat(probes), dense @ probes, atol=1e-10)
        assert np.allclose(operator.matvec(probes[:, 0]), dense @ probes[:, 0], atol=1e-10)
    assert (np.linalg.eigvalsh(dense_hessian(model, x, y, 0.0)) < -1e-6).any()  # negative curvature to find


def test_the_loss_is_cross_entropy_plus_half_the_weight_decay_times_the_squared_norm():
    logits, y = torch.tensor([[2.0, 0.0], [0.0, 1.0]]), torch.tensor([0, 0])
    params = {"a": torch.tensor([1.0, -2.0]), "b": torch.tensor([[3.0]])}
    expected = (np.log1p(np.exp(-2.0)) + np.log1p(np.exp(1.0))) / 2 + 0.1 / 2 * (1 + 4 + 9)
    assert nll_and_l2(0.1)(logits, y, params).item() == pytest.approx(expected)


def test_quadrature_nodes_and_weights_of_a_known_spectrum():
    spectrum = np.array([-2.0, -1.0, 0.5, 3.0])
    start = np.array([0.1, 0.3, 0.5, np.sqrt(1 - 0.35)])
    nodes, weights = quadrature(aslinearoperator(np.diag(spectrum)), start, 4)
    assert nodes == pytest.approx(spectrum) and weights == pytest.approx(start ** 2)  # Gauss: exact at n steps
    # three distinct eigenvalues: the Krylov space ends after three steps, whatever is asked
    nodes, weights = quadrature(aslinearoperator(np.diag([1.0, 1.0, 2.0, 2.0, 5.0])), np.full(5, 1 / np.sqrt(5)), 5)
    assert nodes == pytest.approx([1.0, 2.0, 5.0]) and weights == pytest.approx([0.4, 0.4, 0.2])
    # fewer steps than distinct eigenvalues: as many nodes, inside the spectrum, weights still summing to 1
    nodes, weights = quadrature(aslinearoperator(np.diag(spectrum)), start, 2)
    assert len(nodes) == 2 and -2 <= nodes.min() and nodes.max() <= 3 and weights.sum() == pytest.approx(1.0)


def test_quadrature_is_the_same_at_every_scale():
    """The early stop compares the residual with 1e-10 x the operator's scale: at 1e-6 the three distinct
    eigenvalues are still three nodes, with their weights (1e-10 / the scale, 4.5e-5 at the first step,
    stopped after one)."""
    operator = aslinearoperator(np.diag([1.0, 1.0, 2.0, 2.0, 5.0]) * 1e-6)
    nodes, weights = quadrature(operator, np.full(5, 1 / np.sqrt(5)), 5)
    assert nodes == pytest.approx([1e-6, 2e-6, 5e-6], rel=1e-6) and weights == pytest.approx([0.4, 0.4, 0.2])


def test_quadrature_of_the_zero_operator_is_one_node_at_zero():
    """A Krylov space exhausted at once (a residual of exactly 0) ends the quadrature: one node, 0, at
    weight 1, not a division by zero."""
    nodes, weights = quadrature(aslinearoperator(np.zeros((3, 3))), np.full(3, 1 / np.sqrt(3)), 3)
    assert nodes.tolist() == [0.0] and weights.tolist() == [1.0]


def test_spectral_density_enters_the_top_pairs_exactly_and_the_rest_by_probes():
    """A diagonal H whose bulk is one value c: the probes, projected off the top eigenvectors (axes),
    carry exactly (n - k) / n of the trace, all at c."""
    n, c = 20, 0.5
    spectrum = np.r_[[-6.0, 4.0], np.full(n - 2, c)]
    vectors = np.eye(n)[:, :2]
    density = spectral_density(aslinearoperator(np.diag(spectrum)), spectrum[:2], vectors, 5, 3, np.random.default_rng(0))
    assert density[:2] == [(-1, -6.0, 1 / n), (-1, 4.0, 1 / n)]
    rest = density[2:]
    assert [probe for probe, _, _ in rest] == [0, 1, 2]  # one node per probe: c, the bulk's only value
    assert all(node == pytest.approx(c) and weight == pytest.approx((n - 2) / n / 3) for _, node, weight in rest)
    probe, nodes, weights = (np.array(column) for column in zip(*density))
    exact = 36 / (36 + 16 + (n - 2) * c ** 2)
    assert negative_curvature_share(nodes, weights) == pytest.approx(exact)


def test_the_negative_share_is_of_squared_curvature():
    # |lambda| instead of lambda^2 would give 2 / 3; a positive semi-definite spectrum has none
    assert negative_curvature_share(np.array([-2.0, 1.0]), np.array([0.5, 0.5])) == pytest.approx(0.8)
    assert negative_curvature_share(np.array([-1.0, 0.0, 3.0]), np.array([0.2, 0.5, 0.3])) == pytest.approx(
        0.2 / (0.2 + 0.3 * 9))
    assert negative_curvature_share(np.array([0.0, 1.0]), np.array([0.5, 0.5])) == 0.0


def test_hessian_rows_measure_the_hessian_of_the_training_batch():
    """One mini-batch of all 12 images, no augmentation: the rows are the dense Hessian's top two by
    magnitude (NLL + L2) and its two ends; the density's exact part is those pairs (two batches, and
    augmentation, in the tests below)."""
    model, x, y = _net_and_data()
    train = replace(PARAMS.real, shift=0, hflip=False, weight_decay=0.1)
    cfg = replace(PARAMS.pk, hessian_batches=1, hessian_batch_size=12, hessian_top=2, hessian_deflate=3,
                  hessian_density_steps=6, hessian_density_probes=2, hessian_tol=1e-10)
    dense = np.linalg.eigvalsh(dense_hessian(model, x, y, 0.1))
    rows, density = hessian_rows("tiny", 4, model, x, y, cfg, train)
    assert [r[:5] for r in rows] == [("tiny", 4, 0, "top", 0), ("tiny", 4, 0, "top", 1), ("tiny", 4, 0, "min", 0),
                                     ("tiny", 4, 0, "max", 0)]
    by_magnitude = dense[np.argsort(-np.abs(dense))]
    assert [r[5] for r in rows[:2]] == pytest.approx(np.sort(by_magnitude[:2]), rel=1e-6)
    assert [r[5] for r in rows[2:]] == pytest.approx([dense[0], dense[-1]], rel=1e-6)
    exact = [(r[4], r[5], r[6]) for r in density if r[3] == -1]
    assert [node for _, node, _ in exact] == pytest.approx(by_magnitude[:3], rel=1e-6)
    assert [k for k, _, _ in exact] == [0, 1, 2] and all(w == 1 / 63 for _, _, w in exact)
    assert {r[3] for r in density} == {-1, 0, 1} and {r[:3] for r in density} == {("tiny", 4, 0)}
    assert sum(r[6] for r in density) == pytest.approx(1.0, abs=0.15)  # probes carry about (n - k) / n


def _order(n: int, cfg: PKParams) -> torch.Tensor:
    """The images' order that hessian_rows cuts into mini-batches: a permutation seeded by hessian_seed."""
    return torch.randperm(n, generator=torch.Generator().manual_seed(cfg.hessian_seed))


def test_each_mini_batch_is_its_own_six_images_with_its_own_density():
    """Two batches of six: batch b's rows are the dense Hessian of images order[6b:6b + 6], where order
    is drawn from hessian_seed alone (here 0, the model's seed 3), and the density keeps both batches,
    each weighing about 1."""
    model, x, y = _net_and_data()
    train = replace(PARAMS.real, shift=0, hflip=False, weight_decay=0.1)
    halves = replace(PARAMS.pk, hessian_batches=2, hessian_batch_size=6, hessian_top=2, hessian_deflate=3,
                     hessian_density_steps=6, hessian_density_probes=2, hessian_tol=1e-10, hessian_seed=0)
    found, density = hessian_rows("tiny", 3, model, x, y, halves, train)
    assert [r[2] for r in found] == [0] * 4 + [1] * 4
    assert found[0][5] != pytest.approx(found[4][5], rel=1e-3)
    order = _order(12, halves)
    for batch in (0, 1):
        index = order[6 * batch:6 * batch + 6]
        dense = np.linalg.eigvalsh(dense_hessian(model, x[index], y[index], 0.1))
        by_magnitude = dense[np.argsort(-np.abs(dense))]
        rows = found[4 * batch:4 * batch + 4]
        assert [r[5] for r in rows] == pytest.approx([*np.sort(by_magnitude[:2]), dense[0], dense[-1]], rel=1e-6)
        assert sum(r[6] for r in density if r[2] == batch) == pytest.approx(1.0, abs=0.15)
    assert {r[2] for r in density} == {0, 1}


def test_hessian_rows_measure_the_batch_augmented_as_the_model_trained():
    """Shifts and flips on: the rows are the dense Hessian of the batch augmented by a generator seeded
    by hessian_seed (neither the raw batch nor one with shifts or flips alone)."""
    model, x, y = _net_and_data()
    train = replace(PARAMS.real, shift=1, hflip=True, weight_decay=0.1)
    cfg = replace(PARAMS.pk, hessian_batches=1, hessian_batch_size=12, hessian_top=2, hessian_deflate=2,
                  hessian_density_steps=2, hessian_density_probes=1, hessian_tol=1e-10)
    order = _order(12, cfg)
    images = augment(x[order], 1, True, torch.Generator().manual_seed(cfg.hessian_seed))
    dense = np.linalg.eigvalsh(dense_hessian(model, images, y[order], 0.1))
    by_magnitude = dense[np.argsort(-np.abs(dense))]
    rows, _ = hessian_rows("tiny", 0, model, x, y, cfg, train)
    assert [r[5] for r in rows] == pytest.approx([*np.sort(by_magnitude[:2]), dense[0], dense[-1]], rel=1e-6)


def test_hessian_rows_repeat_to_the_bit_whatever_torch_global_seed():
    """The augmentation draws from its own seeded generator, the Lanczos and probe vectors from one seeded
    by (hessian_seed, model, seed, batch): the same call gives the same bytes, rows and density, after
    any torch.manual_seed."""
    model, x, y = _net_and_data()
    train = replace(PARAMS.real, shift=1, hflip=True)
    cfg = replace(PARAMS.pk, hessian_batches=1, hessian_batch_size=12, hessian_top=2, hessian_deflate=2,
                  hessian_density_steps=3, hessian_density_probes=1)
    runs = []
    for torch_seed in (1, 2):
        torch.manual_seed(torch_seed)
        runs.append(hessian_rows("tiny", 0, model, x, y, cfg, train))
    assert runs[0] == runs[1]


def test_hessian_rows_refuse_more_eigenpairs_than_parameters():
    model, x, y = _net_and_data()
    cfg = replace(PARAMS.pk, hessian_batches=1, hessian_batch_size=12, hessian_top=2, hessian_deflate=63)
    with pytest.raises(ParamsError, match=r"63 eigenpairs, but model tiny has only 63 parameters"):
        hessian_rows("tiny", 0, model, x, y, cfg, replace(PARAMS.real, shift=0, hflip=False))


def test_hessian_rows_refuse_batches_the_images_cannot_fill():
    # the refusal names the model whose images fall short (test_pk.py checks check_batches' arithmetic)
    model, x, y = _net_and_data()
    cfg = replace(PARAMS.pk, hessian_batches=2, hessian_batch_size=12, hessian_top=2, hessian_deflate=3)
    with pytest.raises(ParamsError, match=r"2 x 12 exceeds the 12 training images model tiny trained on"):
        hessian_rows("tiny", 0, model, x, y, cfg, replace(PARAMS.real, shift=0, hflip=False))
