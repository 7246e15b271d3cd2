"""[PK22] PK-7: the lesion study. One block at a time is replaced by the identity on its residual branch,
and the accuracy the model loses is recorded: in AlterNet and in the CNN of its shape (the control: a
stage's closing block that is a convolution) every block but those that downsample (whose skip path is
a projection), in the ViT every attention and every MLP branch."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import torch
from torch import nn

from vitheory.images.models import SmallResNet, SmallViT
from vitheory.images.training import evaluate
from vitheory.pk22.models import AlterNet, MapAttention

COLUMNS = {"model": str, "seed": int, "index": int, "kind": str, "stage": int, "position": int,
           "accuracy_drop": float}


class _ZeroBranch(nn.Module):
    """A residual branch that adds nothing: attention (which also returns its maps) or an MLP."""

    def __init__(self, returns_maps: bool):
        super().__init__()
        self.returns_maps = returns_maps

    def forward(self, x: torch.Tensor, *args: torch.Tensor):
        zero = torch.zeros_like(x)
        return (zero, None) if self.returns_maps else zero


def lesions(model: nn.Module) -> Iterator[tuple[dict, nn.Module]]:
    """(where, the model with that one branch removed) for every lesionable branch."""
    if isinstance(model, (AlterNet, SmallResNet)):
        index = 0
        for stage, count in enumerate(model.config["blocks"]):
            for position in range(count):
                layer = model.layers[index]
                if not (stage > 0 and position == 0):  # a downsampling block has no identity
                    lesioned = copy.deepcopy(model)
                    if isinstance(layer, MapAttention):
                        lesioned.layers[index].block.attn = _ZeroBranch(returns_maps=True)
                        lesioned.layers[index].block.mlp = _ZeroBranch(returns_maps=False)
                    else:  # a conv block on a grid it keeps: relu(0 + x) = x, its input being post-ReLU
                        lesioned.layers[index] = nn.Identity()
                    kind = "msa" if isinstance(layer, MapAttention) else "conv"
                    yield {"index": index, "kind": kind, "stage": stage, "position": position}, lesioned
                index += 1
    elif isinstance(model, SmallViT):
        for index, block in enumerate(model.blocks):
            for kind, name in (("msa", "attn"), ("mlp", "mlp")):
                lesioned = copy.deepcopy(model)
                setattr(lesioned.blocks[index], name, _ZeroBranch(returns_maps=kind == "msa"))
                yield {"index": index, "kind": kind, "stage": 0, "position": index}, lesioned
    else:
        raise TypeError(f"no lesion study for {type(model).__name__}")


@torch.no_grad()
def lesion_rows(name: str, seed: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> list[tuple]:
    """The test accuracy lost by removing each branch of `model`, as rows of `COLUMNS`."""
    intact = evaluate(model, x, y)["accuracy"]
    return [(name, seed, where["index"], where["kind"], where["stage"], where["position"],
             intact - evaluate(lesioned, x, y)["accuracy"]) for where, lesioned in lesions(model)]
