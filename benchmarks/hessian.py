"""Benchmark: Hessian-vector products of `pk_analysis`, side by side in one run.

    python -m benchmarks.hessian [--products 20]

`vitheory.pk22.hessian.hessian_operator` builds the gradient's graph once per mini-batch and goes
backward through it for each product (reverse over reverse). The baseline is torch.func's forward over
reverse, jvp(grad(loss)), which rebuilds the gradient for every product. Both take the Hessian of NLL +
L2 of the default ViT and CNN (as `pk_analysis` configures them, freshly initialised) on one mini-batch
of `pk.hessian_batch_size` training images. Prints milliseconds per product of each, the speed-up, and
the largest difference between the two products relative to the largest entry.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np
import torch
from torch.func import functional_call, grad, jvp

from benchmarks import load_average
from vitheory.core.device import seeded
from vitheory.images.prepare import prepare
from vitheory.images.training import build_model, load_images
from vitheory.params import DEFAULT_PATH, load_params
from vitheory.pk22.hessian import hessian_operator, nll_and_l2


def forward_over_reverse(model: torch.nn.Module, loss_fn, x: torch.Tensor, y: torch.Tensor):
    """The baseline product v -> H v: jvp of torch.func's gradient, the gradient rebuilt each time."""
    model.eval()
    params = {n: p.detach() for n, p in model.named_parameters()}
    buffers = dict(model.named_buffers())
    gradient = grad(lambda theta: loss_fn(functional_call(model, (theta, buffers), (x,)), y, theta))

    def matvec(vector: np.ndarray) -> np.ndarray:
        chunks = torch.from_numpy(vector).split([p.numel() for p in params.values()])
        tangent = {n: c.reshape(p.shape).to(p) for (n, p), c in zip(params.items(), chunks)}
        _, product = jvp(gradient, (params,), (tangent,))
        return torch.cat([product[n].reshape(-1) for n in params]).double().numpy()
    return matvec


def milliseconds_per_product(matvec, vectors: list[np.ndarray]) -> tuple[float, list[np.ndarray]]:
    matvec(vectors[0])  # warm-up
    start = time.perf_counter()
    products = [matvec(v) for v in vectors]
    return 1000 * (time.perf_counter() - start) / len(vectors), products


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--products", type=int, default=20)
    args = parser.parse_args()
    params = load_params(DEFAULT_PATH)
    with tempfile.TemporaryDirectory() as folder:
        prepare(params.images, Path(folder) / "images")
        data = load_images(Path(folder) / "images", ("train",), torch.device("cpu"))
    batch = params.pk.hessian_batch_size
    x, y = data.x["train"][:batch], data.y["train"][:batch]
    loss_fn = nll_and_l2(params.real.weight_decay)
    print(f"{torch.get_num_threads()} threads, mini-batch of {batch}, {args.products} products each")
    print(f"{'model':6} {'parameters':>10} {'fwd-over-rev ms':>16} {'rev-over-rev ms':>16} {'speed-up':>9} "
          f"{'max rel. diff':>14}")
    for name in ("vit", "cnn"):
        build = partial(build_model, getattr(params.real.models, name), data.image_size, data.channels,
                        data.n_classes)
        model = seeded(0, build)
        operator = hessian_operator(model, loss_fn, x, y)
        rng = np.random.default_rng(0)
        vectors = [rng.standard_normal(operator.shape[0]) for _ in range(args.products)]
        baseline, expected = milliseconds_per_product(forward_over_reverse(model, loss_fn, x, y), vectors)
        ours, products = milliseconds_per_product(operator.matvec, vectors)
        difference = max(np.abs(p - e).max() / np.abs(e).max() for p, e in zip(products, expected))
        print(f"{name:6} {operator.shape[0]:>10} {baseline:>16.1f} {ours:>16.1f} {baseline / ours:>8.2f}x "
              f"{difference:>14.1e}  {load_average()}")


if __name__ == "__main__":
    main()
