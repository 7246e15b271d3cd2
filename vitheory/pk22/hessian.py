"""[PK22] PK-2, PK-8: the Hessian spectrum of the training loss, by Lanczos on Hessian-vector products:
its top eigenvalues by magnitude (the official NEP and APE), both ends, and its spectral density by
stochastic Lanczos quadrature (PyHessian's method)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812
from scipy.sparse.linalg import LinearOperator, eigsh
from torch import nn
from tqdm import tqdm

from vitheory.core.errors import ParamsError
from vitheory.images.params import RealTrainParams
from vitheory.images.training import augment
from vitheory.pk22.params import PKParams

COLUMNS = {"model": str, "seed": int, "batch": int, "which": str, "rank": int, "eigenvalue": float}
# one Lanczos node of a mini-batch's density: sum over nodes of weight * f(eigenvalue) estimates tr f(H) / n
DENSITY_COLUMNS = {"model": str, "seed": int, "batch": int, "node": int, "eigenvalue": float, "weight": float}


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


def top_eigenvalues(operator: LinearOperator, k: int, seed: int, tol: float = 1e-6) -> np.ndarray:
    """The k eigenvalues of largest magnitude (Lanczos, scipy's eigsh), ascending."""
    return lanczos_eigenvalues(operator, k, "LM", seed, tol)


def lanczos_eigenvalues(operator: LinearOperator, k: int, which: str, seed: int, tol: float) -> np.ndarray:
    """k eigenvalues (scipy's eigsh, `which` as it takes it), ascending, from a start vector and restart
    vectors drawn from `seed`: ARPACK asks for a fresh random vector when its Krylov space runs out, and
    scipy draws it from the OS's entropy unless given a generator, so the run would not repeat."""
    rng = np.random.default_rng(seed)
    start = rng.standard_normal(operator.shape[0])
    return np.sort(eigsh(operator, k=k, which=which, v0=start, tol=tol, rng=rng, return_eigenvectors=False))


def nll_and_l2(weight_decay: float) -> Callable[..., torch.Tensor]:
    """The loss whose Hessian the official code measures: cross-entropy plus the L2 term of the weight
    decay the model trained with, (weight_decay / 2) |theta|^2."""
    def loss(logits: torch.Tensor, y: torch.Tensor, params: dict[str, torch.Tensor]) -> torch.Tensor:
        return F.cross_entropy(logits, y) + weight_decay / 2 * sum(p.pow(2).sum() for p in params.values())
    return loss


def extreme_eigenvalues(operator: LinearOperator, seed: int, tol: float) -> tuple[float, float]:
    """(lambda_min, lambda_max): the two ends of the spectrum, whatever their magnitudes (Lanczos)."""
    low, high = lanczos_eigenvalues(operator, 2, "BE", seed, tol)
    return float(low), float(high)


def density_nodes(operator: LinearOperator, steps: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Stochastic Lanczos quadrature from one Rademacher probe v (|v| = 1): `steps` Lanczos steps with
    full reorthogonalisation give a tridiagonal T; its eigenvalues are the nodes, the squared first
    components of its eigenvectors their weights (they sum to 1), and sum_k weight_k f(node_k) = v^T f(H) v
    estimates tr f(H) / n. Stops early, with fewer nodes, when the Krylov space is exhausted."""
    size = operator.shape[0]
    basis = np.zeros((min(steps, size), size))
    basis[0] = np.random.default_rng(seed).choice([-1.0, 1.0], size) / np.sqrt(size)
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


def negative_curvature_share(nodes: np.ndarray, weights: np.ndarray) -> float:
    """tr(H_-^2) / tr(H^2) from density nodes: the share of the Hessian's squared curvature (its Frobenius
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
                 train: RealTrainParams) -> tuple[list[tuple], list[tuple]]:
    """On `cfg.hessian_batches` mini-batches of the model's own training images (x, y), augmented as it
    trained (`train`'s shifts and flips), the Hessian of NLL + L2: its top eigenvalues by magnitude (the
    official NEP and APE) and both ends of its spectrum, as rows of `COLUMNS`, and its density nodes as
    rows of `DENSITY_COLUMNS`. The batches are the same for every seed of a model, and full."""
    check_batches(len(y), cfg, name)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(cfg.hessian_seed))
    augmentation = torch.Generator().manual_seed(cfg.hessian_seed)
    rows, density = [], []
    for batch in tqdm(range(cfg.hessian_batches), desc=f"Hessian {name} seed {seed}", mininterval=1.0):
        index = order[batch * cfg.hessian_batch_size:(batch + 1) * cfg.hessian_batch_size].to(x.device)
        images = augment(x[index], train.shift, train.hflip, augmentation)
        operator = hessian_operator(model, nll_and_l2(train.weight_decay), images, y[index])
        top = top_eigenvalues(operator, cfg.hessian_top, cfg.hessian_seed + batch, cfg.hessian_tol)
        rows += [(name, seed, batch, "top", rank, float(value)) for rank, value in enumerate(top)]
        low, high = extreme_eigenvalues(operator, cfg.hessian_seed + batch, cfg.hessian_tol)
        rows += [(name, seed, batch, "min", 0, low), (name, seed, batch, "max", 0, high)]
        nodes, weights = density_nodes(operator, cfg.hessian_density_steps, cfg.hessian_seed + batch)
        density += [(name, seed, batch, k, float(node), float(weight))
                    for k, (node, weight) in enumerate(zip(nodes, weights))]
    return rows, density
