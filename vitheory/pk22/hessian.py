"""[PK22] PK-2, PK-8: the Hessian spectrum of the training loss, by Lanczos on Hessian-vector products:
its top eigenvalues by magnitude (the official NEP and APE), both ends, and its spectral density by
stochastic Lanczos quadrature (PyHessian's method)."""

from __future__ import annotations

import zlib
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812
from scipy.sparse.linalg import LinearOperator, eigsh
from threadpoolctl import threadpool_limits
from torch import nn
from tqdm import tqdm

from vitheory.core.errors import ParamsError
from vitheory.images.params import RealTrainParams
from vitheory.images.recipe import augment
from vitheory.pk22.params import PKParams

COLUMNS = {"model": str, "seed": int, "batch": int, "which": str, "rank": int, "eigenvalue": float}
# one node of a mini-batch's density (probe -1: a top eigenvalue, exact): sum over a mini-batch's nodes of
# weight * f(eigenvalue) estimates tr f(H) / n
DENSITY_COLUMNS = {"model": str, "seed": int, "batch": int, "probe": int, "node": int, "eigenvalue": float,
                   "weight": float}


def hessian_operator(model: nn.Module, loss_fn: Callable[..., torch.Tensor], x: torch.Tensor,
                     y: torch.Tensor) -> LinearOperator:
    """The Hessian of loss_fn(model(x), y, parameters) with respect to the trainable parameters, as a scipy
    LinearOperator of Hessian-vector products. Buffers (BatchNorm statistics) are held fixed; the model is
    evaluated in eval mode."""
    model.eval()
    named = {n: p for n, p in model.named_parameters() if p.requires_grad}
    params = list(named.values())
    sizes = [p.numel() for p in params]
    # The gradient's graph is built once and kept: each product is then one backward pass through it
    # (reverse over reverse), measured 3x faster here than torch.func's forward over reverse, which
    # rebuilt the gradient for every product.
    with torch.enable_grad():
        gradient = torch.autograd.grad(loss_fn(model(x), y, named), params, create_graph=True)

    def matvec(vector: np.ndarray) -> np.ndarray:
        chunks = torch.from_numpy(np.asarray(vector, dtype=np.float64).reshape(-1)).split(sizes)
        tangent = [c.reshape(p.shape).to(p) for c, p in zip(chunks, params)]
        with torch.enable_grad():
            hvp = torch.autograd.grad(gradient, params, grad_outputs=tangent, retain_graph=True,
                                      materialize_grads=True)
        return torch.cat([h.reshape(-1) for h in hvp]).double().cpu().numpy()

    size = sum(sizes)
    return LinearOperator((size, size), matvec=matvec, dtype=np.float64)


def top_eigenpairs(operator: LinearOperator, k: int, rng: np.random.Generator, tol: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The k eigenvalues of largest magnitude, ascending, and their unit eigenvectors as columns (Lanczos,
    scipy's eigsh); start and restart vectors from `rng` (see `lanczos_eigenvalues`)."""
    values, vectors = eigsh(operator, k=k, which="LM", v0=rng.standard_normal(operator.shape[0]), tol=tol, rng=rng)
    order = np.argsort(values)
    return values[order], vectors[:, order]


def lanczos_eigenvalues(operator: LinearOperator, k: int, which: str, rng: np.random.Generator, tol: float
                        ) -> np.ndarray:
    """k eigenvalues (scipy's eigsh, `which` as it takes it), ascending, from a start vector and restart
    vectors drawn from `rng`: ARPACK asks for a fresh random vector when its Krylov space runs out, and
    scipy draws it from the OS's entropy unless given a generator, so the run would not repeat."""
    start = rng.standard_normal(operator.shape[0])
    return np.sort(eigsh(operator, k=k, which=which, v0=start, tol=tol, rng=rng, return_eigenvectors=False))


def nll_and_l2(weight_decay: float) -> Callable[..., torch.Tensor]:
    """The loss whose Hessian the official code measures: cross-entropy plus the L2 term of the weight
    decay the model trained with, (weight_decay / 2) |theta|^2."""
    def loss(logits: torch.Tensor, y: torch.Tensor, params: dict[str, torch.Tensor]) -> torch.Tensor:
        return F.cross_entropy(logits, y) + weight_decay / 2 * sum(p.pow(2).sum() for p in params.values())
    return loss


def extreme_eigenvalues(operator: LinearOperator, rng: np.random.Generator, tol: float) -> tuple[float, float]:
    """(lambda_min, lambda_max): the two ends of the spectrum, whatever their magnitudes (Lanczos)."""
    low, high = lanczos_eigenvalues(operator, 2, "BE", rng, tol)
    return float(low), float(high)


def quadrature(operator: LinearOperator, start: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Lanczos quadrature from the unit vector `start`: `steps` Lanczos steps with full
    reorthogonalisation give a tridiagonal T; its eigenvalues are the nodes, the squared first components
    of its eigenvectors their weights (they sum to 1), and sum_k weight_k f(node_k) = start^T f(H) start.
    Stops early, with fewer nodes, when the Krylov space is exhausted."""
    basis = np.zeros((min(steps, len(start)), len(start)))
    basis[0] = start
    alpha, beta = [], []
    for j in range(len(basis)):
        w = operator.matvec(basis[j])
        alpha.append(float(w @ basis[j]))
        for _ in range(2):  # full reorthogonalisation, twice: Ritz values without ghosts, to rounding
            w -= basis[:j + 1].T @ (basis[:j + 1] @ w)
        norm = float(np.linalg.norm(w))
        if j + 1 == len(basis) or norm <= 1e-10 * max(abs(a) for a in alpha):
            break
        beta.append(norm)
        basis[j + 1] = w / norm
    tridiagonal = np.diag(alpha) + np.diag(beta, 1) + np.diag(beta, -1)
    nodes, vectors = np.linalg.eigh(tridiagonal)
    return nodes, vectors[0] ** 2


def spectral_density(operator: LinearOperator, values: np.ndarray, vectors: np.ndarray, steps: int, probes: int,
                     rng: np.random.Generator) -> list[tuple[int, float, float]]:
    """The spectral density of H as weighted nodes (probe, node, weight) whose weights sum to about 1, so that
    sum weight x f(node) estimates tr f(H) / n. The eigenpairs given (`values`, `vectors` as columns, the
    largest by magnitude) enter exactly, each with weight 1 / n (probe -1); the rest of the spectrum, the
    operator deflated of them, by stochastic Lanczos quadrature (PyHessian's method) from `probes`
    Rademacher vectors projected off those eigenvectors, `steps` steps each, averaged. The few largest
    eigenvalues carry most of tr(H^2): left to a probe, they make one probe's share a coin toss."""
    size = operator.shape[0]

    def off_top(v: np.ndarray) -> np.ndarray:
        return v - vectors @ (vectors.T @ v)

    rest = LinearOperator(operator.shape, matvec=lambda v: off_top(operator.matvec(off_top(np.ravel(v)))),
                          dtype=np.float64)
    density = [(-1, float(value), 1 / size) for value in values]
    for probe in range(probes):
        start = off_top(rng.choice([-1.0, 1.0], size) / np.sqrt(size))
        mass = float(start @ start)  # E[mass] = (n - k) / n: the share of the trace left to the probes
        nodes, weights = quadrature(rest, start / np.sqrt(mass), steps)
        density += [(probe, float(node), float(weight) * mass / probes) for node, weight in zip(nodes, weights)]
    return density


def negative_curvature_share(nodes: np.ndarray, weights: np.ndarray) -> float:
    """tr(H_-^2) / tr(H^2) from `spectral_density`'s nodes and weights: the share of the Hessian's squared curvature (its Frobenius
    norm) in negative eigen-directions. Cutoff-free, and 0 exactly when H is positive semi-definite."""
    energy = weights * nodes ** 2
    return float(energy[nodes < 0].sum() / energy.sum())


def check_batches(n_images: int, cfg: PKParams, name: str) -> None:
    """Refuse mini-batches that the `n_images` a model trained on cannot fill: an empty batch's Hessian is
    the L2 term alone, a batch of two images a caricature of the loss's."""
    if cfg.hessian_batches * cfg.hessian_batch_size > n_images:
        raise ParamsError(f"pk.hessian_batches x pk.hessian_batch_size = {cfg.hessian_batches} x "
                          f"{cfg.hessian_batch_size} exceeds the {n_images} training images model {name} trained "
                          "on; lower them in params.yaml so that every mini-batch is full")


def hessian_rows(name: str, seed: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor, cfg: PKParams,
                 train: RealTrainParams, blas_threads: int | None = 1) -> tuple[list[tuple], list[tuple]]:
    """On `cfg.hessian_batches` mini-batches of the model's own training images (x, y), augmented as it
    trained (`train`'s shifts and flips), the Hessian of NLL + L2: its top eigenvalues by magnitude (the
    official NEP and APE) and both ends of its spectrum, as rows of `COLUMNS`, and its spectral density
    (`spectral_density`, the top `cfg.hessian_deflate` eigenpairs exact) as rows of `DENSITY_COLUMNS`.
    The batches are the same for every seed of a model, and full; the Lanczos and probe vectors are
    drawn afresh for every model, seed and mini-batch.

    numpy's and scipy's BLAS run on `blas_threads` threads (None: as many as they like) meanwhile: the
    Lanczos vectors are small, and the BLAS threads that spin between products took the cores torch's
    products need (benchmarks/levers.py: the default, one thread, is the faster)."""
    check_batches(len(y), cfg, name)
    with threadpool_limits(limits=blas_threads, user_api="blas"):
        return _hessian_rows(name, seed, model, x, y, cfg, train)


def _hessian_rows(name: str, seed: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor, cfg: PKParams,
                  train: RealTrainParams) -> tuple[list[tuple], list[tuple]]:
    """`hessian_rows`, BLAS threads as they are set."""
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(cfg.hessian_seed))
    augmentation = torch.Generator().manual_seed(cfg.hessian_seed)
    rows, density = [], []
    for batch in tqdm(range(cfg.hessian_batches), desc=f"Hessian {name} seed {seed}", mininterval=1.0,
                      leave=False):
        index = order[batch * cfg.hessian_batch_size:(batch + 1) * cfg.hessian_batch_size].to(x.device)
        images = augment(x[index], train.shift, train.hflip, augmentation)
        operator = hessian_operator(model, nll_and_l2(train.weight_decay), images, y[index])
        rng = np.random.default_rng([cfg.hessian_seed, zlib.crc32(name.encode()), seed, batch])
        wanted = max(cfg.hessian_top, cfg.hessian_deflate)
        if wanted >= operator.shape[0]:
            raise ParamsError(f"pk.hessian_top / pk.hessian_deflate = {wanted} eigenpairs, but model {name} has only "
                              f"{operator.shape[0]} parameters: lower them in params.yaml")
        values, vectors = top_eigenpairs(operator, wanted, rng, cfg.hessian_tol)
        by_magnitude = np.argsort(-np.abs(values), kind="stable")
        top = np.sort(values[by_magnitude[:cfg.hessian_top]])
        rows += [(name, seed, batch, "top", rank, float(value)) for rank, value in enumerate(top)]
        low, high = extreme_eigenvalues(operator, rng, cfg.hessian_tol)
        rows += [(name, seed, batch, "min", 0, low), (name, seed, batch, "max", 0, high)]
        deflated = by_magnitude[:cfg.hessian_deflate]
        nodes = spectral_density(operator, values[deflated], vectors[:, deflated], cfg.hessian_density_steps,
                                 cfg.hessian_density_probes, rng)
        density += [(name, seed, batch, probe, k, node, weight) for k, (probe, node, weight) in enumerate(nodes)]
    return rows, density
