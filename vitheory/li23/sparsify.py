"""[LI23] Figure 2b: token sparsification (LI-4).

Tokens are removed from every example, in training and test alike, before a ViT is trained on
what is left. The strategies: by kind (an oracle that knows which tokens are label-irrelevant,
confusion or label-relevant), by noise (the noisiest of every kind, which lowers tau and leaves
alpha* and alpha# as they were), at random (as many of every kind: the control for noise), and by the
attention a ViT trained on the full data gives each token (the least attended first: what a
practitioner can do).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch
from tqdm import tqdm

from vitheory.core.device import seeded
from vitheory.core.ensemble import Ensemble, EnsembleRecipe, Stacked, loss_and_error, train_ensemble
from vitheory.li23.models import builder
from vitheory.li23.params import SparsifyParams
from vitheory.li23.tokens import CONFUSION, IRRELEVANT, KIND_NAMES, RELEVANT, TokenData, generate

COLUMNS = {"strategy": str, "keep_ratio": float, "kept_tokens": int, "seed": int, "test_loss": float,
           "test_error": float}
KIND_STRATEGIES = {"irrelevant": IRRELEVANT, "confusion": CONFUSION, "relevant": RELEVANT}
STRATEGIES = ("none", *KIND_STRATEGIES, "noisiest", "attention", "random")


def removal_mask(strategy: str, data: TokenData, received: torch.Tensor | None, keep: float,
                 generator: torch.Generator) -> torch.Tensor:
    """(N, L) the tokens `strategy` removes to keep the share `keep` of what it targets: a kind oracle,
    of its kind's tokens (at random); `noisiest` and `random`, of every kind's tokens alike (the
    noisiest, or at random), so that the shares of relevant and confusion tokens stay as they were
    and only the noise, or only the token count, changes; `attention`, of all tokens, the least
    attended by the ViT trained on the full data. The params check that every count is whole."""
    tie_break = torch.rand(data.kind.shape, generator=generator)
    if strategy in KIND_STRATEGIES:
        targets = {KIND_STRATEGIES[strategy]: tie_break}
    elif strategy in ("noisiest", "random"):
        scores = data.noise_norm if strategy == "noisiest" else tie_break
        targets = {kind: scores for kind in KIND_NAMES}
    elif strategy == "attention":
        targets = {None: -received}
    else:
        raise ValueError(f"unknown strategy {strategy!r}, known: {STRATEGIES}")
    removed = torch.zeros_like(data.kind, dtype=torch.bool)
    for kind, scores in targets.items():
        mine = torch.ones_like(removed) if kind is None else data.kind == kind
        count = int(mine[0].sum())  # every example holds the same number of each kind
        n_remove = count - round(keep * count)
        if n_remove:
            top = torch.where(mine, scores, -torch.inf).topk(n_remove, dim=1).indices
            removed.scatter_(1, top, True)
    return removed


def remove_tokens(data: TokenData, removed: torch.Tensor) -> TokenData:
    """Drop the tokens marked in `removed` (N, L), the same number in every example; the rest keep their order."""
    kept = torch.argsort(removed.to(torch.int8), dim=1, stable=True)[:, :int((~removed[0]).sum())]

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
    build = builder("vit", cfg.vit.model, cfg.data.dim)
    ensemble = Ensemble([seeded(seed, build) for seed, _, _ in runs])
    sgd = EnsembleRecipe(steps=cfg.steps, batch_size=cfg.batch_size, eval_every=cfg.eval_every,
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
                sparse.append(remove_tokens(data, removal_mask(strategy, data, attn, keep, generator)))
            kept = sparse[0].kind.shape[1]
            runs.append((s, *sparse))
        _, metrics = _train(cfg, runs)
        rows += [{"strategy": strategy, "keep_ratio": keep, "kept_tokens": kept, "seed": s,
                  "test_loss": loss, "test_error": err} for s, (loss, err) in enumerate(metrics)]
    return rows
