"""[LI23] LI-3: the shallow ViT trained by mini-batch SGD on the hinge loss (one model per seed, trained as
one ensemble), and the attention mass its queries put on label-relevant tokens, by kind of query."""

from __future__ import annotations

import statistics
from collections.abc import Callable

import torch

from vitheory.core.device import seeded
from vitheory.core.ensemble import Ensemble, EnsembleRecipe, Stacked, hinge, train_ensemble
from vitheory.core.metrics import sign_error_rate
from vitheory.li23.models import ShallowViT, builder
from vitheory.li23.params import LiTokensParams, LiVitTrainParams
from vitheory.li23.tokens import KIND_NAMES, RELEVANT, TokenData

LogFn = Callable[[int, list[dict[str, dict[str, float]]]], None]


def attention_masses(attn: torch.Tensor, kind: torch.Tensor) -> dict[str, float]:
    """Mean attention mass on label-relevant keys, by kind of query ([LI23] claim LI-3).

    Args:
        attn: (N, L_query, L_key) attention probabilities.
        kind: (N, L) token kinds (vitheory.li23.tokens).

    Returns `attn_<kind>_query` for each kind of query present (the mean over those queries of
    the mass they put on label-relevant tokens) and `attn_all_query`, the mean over every query.
    """
    on_relevant = (attn * (kind == RELEVANT).to(attn.dtype)[:, None, :]).sum(dim=-1)  # (N, L_query)
    masses = {"attn_all_query": on_relevant.mean().item()}
    for code, name in KIND_NAMES.items():
        selected = kind == code
        if selected.any():
            masses[f"attn_{name}_query"] = on_relevant[selected].mean().item()
    return masses


def reference_masses(cfg: LiTokensParams) -> dict[str, float]:
    """What the masses are compared with: their value under uniform attention, and the cap on the
    all-query mean. A label-irrelevant query cannot tell the class, so at best it splits its mass
    between both classes' tokens, capping the all-query mean near alpha* / (alpha* + alpha#).
    """
    return {"uniform": cfg.n_relevant / cfg.n_tokens,
            "all_query_cap": cfg.n_relevant / (cfg.n_relevant + cfg.n_confusion)}


@torch.no_grad()
def evaluate(ensemble: Ensemble, data: TokenData, *, with_attention: bool = False) -> list[dict[str, float]]:
    """Hinge loss and 0-1 error of every member on one split; with `with_attention`, the LI-3 masses."""
    device = ensemble.params["W_Q"].device
    members = len(ensemble)
    x = data.X.to(device)[None].expand(members, *data.X.shape)
    y = data.y.to(device, torch.float32)[None].expand(members, -1)
    out, attn = ensemble(x, return_attention=True)
    found = []
    for i in range(members):
        # "error_rate", not "error": DVC takes a truthy metric named "error" for a failure to load
        metrics = {"loss": hinge(out[i], y[i]).mean().item(), "error_rate": sign_error_rate(out[i], y[i])}
        if with_attention:
            metrics |= attention_masses(attn[i], data.kind.to(device))
        found.append(metrics)
    return found


def train_li_vit(train: TokenData, test: TokenData, cfg: LiVitTrainParams, device: torch.device,
                 on_log: LogFn | None = None, progress: bool = True) -> list[ShallowViT]:
    """One model per seed (`cfg.seed`, `cfg.seed + 1`, ...), trained together on the same data; every
    `cfg.log_every` steps (and at 0 and the end) call `on_log(step, per_seed)` with each seed's
    `{"train": ..., "test": ...}` metrics of `evaluate`.

    Raises TrainingDiverged if a training loss becomes non-finite.
    """
    build = builder("vit", cfg.model, train.X.shape[-1])
    seeds = [cfg.seed + i for i in range(cfg.seeds)]
    ensemble = Ensemble([seeded(seed, build).to(device) for seed in seeds])
    sgd = EnsembleRecipe(steps=cfg.steps, batch_size=cfg.batch_size,
                    lr={"mixing": cfg.lr_attention, "mlp": cfg.lr_mlp}, eval_every=cfg.log_every,
                    token_fraction=cfg.token_fraction, stop_at_zero_loss=False,
                    lr_keys={"mixing": "train.li_vit.lr_attention", "mlp": "train.li_vit.lr_mlp"})

    def log(step: int, trained: Ensemble) -> None:
        if on_log is not None:
            on_log(step, [{"train": on_train, "test": on_test} for on_train, on_test in
                          zip(evaluate(trained, train), evaluate(trained, test, with_attention=True))])

    data = Stacked.pad([(train.X, train.y)] * len(seeds)).to(device)
    train_ensemble(ensemble, data, seeds, sgd, on_log=log, log_every=cfg.log_every, progress=progress,
                   desc="train li_vit")
    return [ensemble.member(i, build()) for i in range(len(seeds))]


def mean_over_seeds(per_seed: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Each split's metrics averaged over the seeds."""
    return {split: {name: statistics.mean(seed[split][name] for seed in per_seed) for name in values}
            for split, values in per_seed[0].items()}
