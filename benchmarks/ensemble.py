"""Benchmark: the pipeline's batched trainer against a plain one-model-at-a-time loop.

Trains every cell of the phase grid in params.yaml (phase.*) twice, side by side in one run: with
`vitheory.phase.run_grid` (stacked ensembles, chunked over one single-thread worker per core) and
with a plain loop over the cells (one nn.Module, torch.optim.SGD, the same seeds, mini-batches,
steps and stopping rule, all cores to one process). Also measures the float32 matmul peak of the
machine, and prints models per second, the speed-up, the agreement of the results, and the
training GFLOP/s (FLOPs counted analytically) as a share of that peak.

    python -m benchmarks.ensemble [--model vit|cnn] [--seeds N]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import torch

from benchmarks import load_average
from vitheory.core.device import seeded
from vitheory.core.ensemble import TEST_SCREEN, hinge
from vitheory.core.metrics import sign_error_rate, sign_mistakes
from vitheory.li23.models import builder
from vitheory.li23.params import PhaseParams, cell_tokens
from vitheory.li23.phase import cells, run_grid
from vitheory.li23.tokens import generate
from vitheory.params import load_params


def matmul_peak_gflops(size: int = 2048, repeats: int = 10) -> float:
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * size ** 3 * repeats / (time.perf_counter() - start) / 1e9


def forward_flops(cfg: PhaseParams, model: str) -> float:
    """Multiply-adds x 2 of one example's forward pass."""
    d, length, m = cfg.data.dim, cfg.data.n_tokens, getattr(cfg, model).model.width
    if model == "vit":
        mixing = 3 * length * d * d + 2 * length * length * d  # Q, K, V; scores; attention x values
    else:
        mixing = length * d * d * cfg.cnn.model.kernel
    return 2 * (mixing + length * d * m + length * m)


def plain_loop(cfg: PhaseParams, grid: str, model: str) -> tuple[list[dict], int]:
    """Each cell alone, the textbook way, with the same checks (zero training loss and error, zero test
    error screened on the first test examples). Returns rows like run_grid's and the examples processed."""
    recipe = getattr(cfg, model)
    build = builder(model, recipe.model, cfg.data.dim)
    rows, examples = [], 0
    pools = {}
    for cell in cells(getattr(cfg.grids, grid)):
        key = (cell.alpha_star, cell.seed)
        if key not in pools:
            pools[key] = generate(cell_tokens(cfg.data, cell.alpha_star, cfg.data.seed + cell.seed))
        train, test = pools[key]
        x, y = train.X[:cell.n_train], train.y[:cell.n_train].float()
        net = seeded(cell.seed, build)
        groups = {"mixing": [], "mlp": []}
        for name, param in net.named_parameters():
            groups[net.param_group(name)].append(param)
        optimizer = torch.optim.SGD([
            {"params": groups["mixing"], "lr": recipe.lr_mixing},
            {"params": groups["mlp"], "lr": recipe.lr_mlp}])
        generator = torch.Generator().manual_seed(cell.seed)
        zero_error_step = zero_test_step = -1
        for step in range(cfg.steps + 1):
            if step % cfg.eval_every == 0 or step == cfg.steps:
                with torch.no_grad():
                    out = net(x)
                    examples += len(x)
                    if zero_test_step < 0:
                        screened = sign_mistakes(net(test.X[:TEST_SCREEN]), test.y[:TEST_SCREEN].float()).sum() == 0
                        examples += TEST_SCREEN
                        if screened:
                            examples += len(test.y)
                            if sign_mistakes(net(test.X), test.y.float()).sum() == 0:
                                zero_test_step = step
                if zero_error_step < 0 and sign_mistakes(out, y).sum() == 0:
                    zero_error_step = step
                if hinge(out, y).sum() == 0 or step == cfg.steps:
                    break
            idx = torch.randint(0, cell.n_train, (cfg.batch_size,), generator=generator)
            loss = hinge(net(x[idx]), y[idx]).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            examples += 3 * cfg.batch_size  # forward + backward, counted as three forward passes
        with torch.no_grad():
            error = sign_error_rate(net(test.X), test.y.float())
        rows.append({"alpha_star": cell.alpha_star, "n_train": cell.n_train, "seed": cell.seed,
                     "test_error": error, "steps_to_zero_train_error": zero_error_step,
                     "steps_to_zero_test_error": zero_test_step})
    return rows, examples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=["vit", "cnn"], default="vit")
    parser.add_argument("--grid", choices=["default", "wide"], default="default")
    parser.add_argument("--seeds", type=int, help="fewer seeds than params.yaml, for a quick run")
    args = parser.parse_args()
    cfg = load_params().phase
    spec = getattr(cfg.grids, args.grid)
    if args.seeds:
        spec = replace(spec, seeds=args.seeds)
        cfg = replace(cfg, grids=replace(cfg.grids, **{args.grid: spec}))
    n_models = len(cells(spec))
    cores = torch.get_num_threads()
    print(f"grid: {args.grid}, {args.model}, {n_models} models ({len(spec.alpha_star)} alpha* x {len(spec.n_train)} N "
          f"x {spec.seeds} seeds), up to {cfg.steps} steps each; {cores} cores")

    peak = matmul_peak_gflops()
    print(f"float32 matmul peak (2048^2, {cores} threads): {peak:.1f} GFLOP/s")

    start = time.perf_counter()
    batched = run_grid(cfg, args.grid, args.model, torch.device("cpu"), progress=False)
    batched_s = time.perf_counter() - start

    start = time.perf_counter()
    plain, examples = plain_loop(cfg, args.grid, args.model)
    plain_s = time.perf_counter() - start

    same_steps = sum(a["steps_to_zero_train_error"] == b["steps_to_zero_train_error"] and
                     a["steps_to_zero_test_error"] == b["steps_to_zero_test_error"] for a, b in zip(batched, plain))
    max_error_gap = max(abs(a["test_error"] - b["test_error"]) for a, b in zip(batched, plain))
    gflop = examples * forward_flops(cfg, args.model) / 1e9  # both trainers do the same work
    print(f"batched trainer : {n_models / batched_s:8.2f} models/s ({batched_s:.1f} s), "
          f"{gflop / batched_s:.2f} GFLOP/s = {gflop / batched_s / peak:.2%} of peak")
    print(f"plain loop      : {n_models / plain_s:8.2f} models/s ({plain_s:.1f} s), "
          f"{gflop / plain_s:.2f} GFLOP/s = {gflop / plain_s / peak:.2%} of peak")
    print(f"speed-up        : {plain_s / batched_s:.2f}x ({load_average()})")
    print(f"agreement       : steps to zero training and test error equal in {same_steps}/{n_models} models; "
          f"largest test-error difference {max_error_gap:.4f}")


if __name__ == "__main__":
    main()
