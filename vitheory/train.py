"""Training of the [LI23] shallow ViT by mini-batch SGD on the hinge loss."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from tqdm import tqdm

from vitheory.analysis import attention_masses
from vitheory.li_tokens import TokenData
from vitheory.models import ShallowViT
from vitheory.errors import ParamsError, TrainingDiverged
from vitheory.params import LiVitTrainParams

LogFn = Callable[[int, dict[str, dict[str, float]]], None]


def resolve_device(name: str) -> torch.device:
    """`auto` picks CUDA when present; `cuda` without a GPU is an error, not a silent fallback."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ParamsError("train.device = 'cuda' but no CUDA device is available: use 'auto' or 'cpu'")
    return torch.device(name)


def hinge_loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.relu(1 - y * out).mean()


@torch.no_grad()
def evaluate(model: ShallowViT, data: TokenData, *, with_attention: bool = False) -> dict[str, float]:
    """Hinge loss and 0-1 error on a split; with `with_attention`, the LI-3 attention masses."""
    device = model.W_Q.device
    x, y = data.X.to(device), data.y.to(device, torch.float32)
    out, attn = model(x, return_attention=True)
    metrics = {"loss": hinge_loss(out, y).item(), "error": (y * out <= 0).float().mean().item()}
    if with_attention:
        metrics |= attention_masses(attn, data.kind.to(device))
    return metrics


def subsample_tokens(x: torch.Tensor, fraction: float, generator: torch.Generator) -> torch.Tensor:
    """Keep a random round(fraction * L) of each example's tokens (the theory's token sampling)."""
    n, length, _ = x.shape
    keep = max(1, round(fraction * length))
    if keep == length:
        return x
    order = torch.argsort(torch.rand(n, length, generator=generator), dim=1)[:, :keep]
    return x.gather(1, order.to(x.device)[..., None].expand(-1, -1, x.shape[-1]))


def train_li_vit(train: TokenData, test: TokenData, cfg: LiVitTrainParams, device: torch.device,
                 on_log: LogFn | None = None, progress: bool = True) -> ShallowViT:
    """Train from `cfg.seed`; every `cfg.log_every` steps (and at 0 and the end) call
    `on_log(step, {"train": ..., "test": ...})` with the metrics of `evaluate` on both splits.

    Raises TrainingDiverged if the training loss becomes non-finite.
    """
    torch.manual_seed(cfg.seed)  # the model's initialisation
    generator = torch.Generator().manual_seed(cfg.seed)  # mini-batches and token sampling
    model = ShallowViT(dim=train.X.shape[-1], width=cfg.model.width, qk_init=cfg.model.qk_init,
                       out_init_std=cfg.model.out_init_std).to(device)
    optimizer = torch.optim.SGD([
        {"params": model.attention_parameters, "lr": cfg.lr_attention},
        {"params": model.mlp_parameters, "lr": cfg.lr_mlp},
    ])
    x_train, y_train = train.X.to(device), train.y.to(device, torch.float32)

    def log(step: int) -> None:
        if on_log is not None:
            model.eval()
            on_log(step, {"train": evaluate(model, train), "test": evaluate(model, test, with_attention=True)})
            model.train()

    log(0)
    bar = tqdm(range(1, cfg.steps + 1), desc="train li_vit", disable=not progress, mininterval=1.0)
    for step in bar:
        idx = torch.randint(0, len(train), (cfg.batch_size,), generator=generator).to(device)
        x = subsample_tokens(x_train[idx], cfg.token_fraction, generator)
        loss = hinge_loss(model(x), y_train[idx])
        if not math.isfinite(loss.item()):
            raise TrainingDiverged(
                f"training loss became {loss.item()} at step {step}: lower train.li_vit.lr_attention "
                f"(now {cfg.lr_attention}) or train.li_vit.lr_mlp (now {cfg.lr_mlp})")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % cfg.log_every == 0 or step == cfg.steps:
            bar.set_postfix(loss=f"{loss.item():.4f}", refresh=False)
            log(step)
    return model.eval()
