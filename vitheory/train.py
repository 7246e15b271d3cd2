"""Training of the [LI23] shallow ViT by mini-batch SGD on the hinge loss: an ensemble of one."""

from __future__ import annotations

from collections.abc import Callable

import torch

from vitheory.analysis import attention_masses
from vitheory.ensemble import Ensemble, SGDConfig, Stacked, hinge, seeded, train_ensemble
from vitheory.li_tokens import TokenData
from vitheory.models import ShallowViT, builder
from vitheory.params import LiVitTrainParams

LogFn = Callable[[int, dict[str, dict[str, float]]], None]


@torch.no_grad()
def evaluate(ensemble: Ensemble, data: TokenData, *, with_attention: bool = False) -> dict[str, float]:
    """Hinge loss and 0-1 error of a one-member ensemble; with `with_attention`, the LI-3 masses."""
    device = ensemble.params["W_Q"].device
    x, y = data.X.to(device)[None], data.y.to(device, torch.float32)[None]
    out, attn = ensemble(x, return_attention=True)
    # "error_rate", not "error": DVC takes a truthy metric named "error" for a failure to load
    metrics = {"loss": hinge(out, y).mean().item(), "error_rate": (y * out <= 0).float().mean().item()}
    if with_attention:
        metrics |= attention_masses(attn[0], data.kind.to(device))
    return metrics


def train_li_vit(train: TokenData, test: TokenData, cfg: LiVitTrainParams, device: torch.device,
                 on_log: LogFn | None = None, progress: bool = True) -> ShallowViT:
    """Train from `cfg.seed`; every `cfg.log_every` steps (and at 0 and the end) call
    `on_log(step, {"train": ..., "test": ...})` with the metrics of `evaluate` on both splits.

    Raises TrainingDiverged if the training loss becomes non-finite.
    """
    build = builder(cfg.model, train.X.shape[-1])
    ensemble = Ensemble([seeded(cfg.seed, build).to(device)])
    sgd = SGDConfig(steps=cfg.steps, batch_size=cfg.batch_size,
                    lr={"mixing": cfg.lr_attention, "mlp": cfg.lr_mlp}, eval_every=cfg.log_every,
                    token_fraction=cfg.token_fraction, stop_at_zero_loss=False,
                    lr_keys={"mixing": "train.li_vit.lr_attention", "mlp": "train.li_vit.lr_mlp"})

    def log(step: int, trained: Ensemble) -> None:
        if on_log is not None:
            on_log(step, {"train": evaluate(trained, train), "test": evaluate(trained, test, with_attention=True)})

    data = Stacked.pad([(train.X, train.y)]).to(device)
    train_ensemble(ensemble, data, [cfg.seed], sgd, on_log=log, log_every=cfg.log_every,
                   progress=progress, desc="train li_vit")
    return ensemble.member(0, build())
