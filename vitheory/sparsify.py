"""[LI23] Figure 2b: token sparsification (LI-4).

Tokens are removed from every example, in training and test alike, before a ViT is trained on
what is left. The strategies: by kind (an oracle that knows which tokens are label-irrelevant,
confusion or label-relevant), by noise (the noisiest first), by the attention a ViT trained on the
full data gives each token (the least attended first: what a practitioner can do), and at random.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch
from tqdm import tqdm

from vitheory.ensemble import Ensemble, SGDConfig, Stacked, loss_and_error, seeded, train_ensemble
from vitheory.li_tokens import CONFUSION, IRRELEVANT, RELEVANT, TokenData, generate
from vitheory.models import builder
from vitheory.params import SparsifyParams

KIND_STRATEGIES = {"irrelevant": IRRELEVANT, "confusion": CONFUSION, "relevant": RELEVANT}
STRATEGIES = ("none", *KIND_STRATEGIES, "noisiest", "attention", "random")


def removal_order(strategy: str, data: TokenData, received: torch.Tensor | None,
                  generator: torch.Generator) -> tuple[torch.Tensor, int]:
    """(N, L) scores, highest removed first, and the number of tokens the keep ratio applies to:
    a kind strategy removes a share of the tokens of its kind (every example holds the same
    number), the others a share of all tokens."""
    noise = torch.rand(data.kind.shape, generator=generator)  # ties broken at random
    if strategy in KIND_STRATEGIES:
        mine = data.kind == KIND_STRATEGIES[strategy]
        return torch.where(mine, noise, -1.0), int(mine[0].sum())
    if strategy == "noisiest":
        return data.noise_norm, data.kind.shape[1]
    if strategy == "attention":
        return -received, data.kind.shape[1]
    if strategy == "random":
        return noise, data.kind.shape[1]
    raise ValueError(f"unknown strategy {strategy!r}, known: {STRATEGIES}")


def remove_tokens(data: TokenData, scores: torch.Tensor, n_remove: int) -> TokenData:
    """Drop the n_remove highest-scoring tokens of every example; the rest keep their order."""
    length = data.kind.shape[1]
    kept = torch.argsort(scores, dim=1, stable=True)[:, :length - n_remove].sort(dim=1).values

    def pick(t: torch.Tensor) -> torch.Tensor:
        return t.gather(1, kept if t.dim() == 2 else kept[..., None].expand(-1, -1, t.shape[-1]))

    return replace(data, X=pick(data.X), kind=pick(data.kind), noise_norm=pick(data.noise_norm))


@torch.no_grad()
def attention_received(ensemble: Ensemble, member: int, data: TokenData) -> torch.Tensor:
    """(N, L): the mean over queries of the attention each token receives from member's model."""
    _, attn = ensemble(data.X[None], members=torch.tensor([member]), return_attention=True)
    return attn[0].mean(dim=1)


def _train(cfg: SparsifyParams, runs: Sequence[tuple[int, TokenData, TokenData]]) -> tuple[Ensemble, list]:
    """Train one ViT per (seed, train, test) on its own data; return the ensemble and test metrics."""
    build = builder(cfg.vit.model, cfg.data.dim)
    ensemble = Ensemble([seeded(seed, build) for seed, _, _ in runs])
    sgd = SGDConfig(steps=cfg.steps, batch_size=cfg.batch_size, eval_every=10,
                    lr={"mixing": cfg.vit.lr_mixing, "mlp": cfg.vit.lr_mlp},
                    lr_keys={"mixing": "sparsify.vit.lr_mixing", "mlp": "sparsify.vit.lr_mlp"})
    train_ensemble(ensemble, Stacked.pad([(tr.X, tr.y) for _, tr, _ in runs]), [s for s, _, _ in runs], sgd,
                   progress=False)
    loss, error = loss_and_error(ensemble, torch.stack([te.X for _, _, te in runs]),
                                 torch.stack([te.y for _, _, te in runs]).float())
    return ensemble, list(zip(loss.tolist(), error.tolist()))


def run(cfg: SparsifyParams, progress: bool = True) -> list[dict]:
    """Every strategy x keep ratio x seed, plus the unsparsified baseline (strategy `none`)."""
    length = cfg.data.n_tokens
    splits = [generate(replace(cfg.data, seed=cfg.data.seed + s)) for s in range(cfg.seeds)]
    reference, metrics = _train(cfg, [(s, tr, te) for s, (tr, te) in enumerate(splits)])
    rows = [{"strategy": "none", "keep_ratio": 1.0, "kept_tokens": length, "seed": s,
             "test_loss": loss, "test_error": err} for s, (loss, err) in enumerate(metrics)]
    received = [(attention_received(reference, s, tr), attention_received(reference, s, te))
                for s, (tr, te) in enumerate(splits)]
    jobs = [(k, st) for k in cfg.keep_ratio for st in STRATEGIES[1:]]
    for keep, strategy in tqdm(jobs, desc="sparsify", disable=not progress):
        runs, kept = [], length
        for s, (tr, te) in enumerate(splits):
            generator = torch.Generator().manual_seed(cfg.data.seed + s)
            sparse = []
            for data, attn in zip((tr, te), received[s]):
                scores, targeted = removal_order(strategy, data, attn, generator)
                n_remove = targeted - round(keep * targeted)
                sparse.append(remove_tokens(data, scores, n_remove))
            kept = sparse[0].kind.shape[1]
            runs.append((s, *sparse))
        _, metrics = _train(cfg, runs)
        rows += [{"strategy": strategy, "keep_ratio": keep, "kept_tokens": kept, "seed": s,
                  "test_loss": loss, "test_error": err} for s, (loss, err) in enumerate(metrics)]
    return rows
