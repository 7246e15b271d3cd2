"""[PK22] PK-11: which frequencies inform a model. Test accuracy on low-passed and on high-passed test
images, and a cue conflict: the low-pass of one test digit plus the high-pass of another of a different
class, read as the label of either. Its positive control is a CNN trained (train_real's recipe, fewer
epochs) on low-passed training images, which has no high-frequency information to learn from.

Unlike PK-5, which adds noise in one band and measures how much accuracy a model loses (what it is
sensitive to), PK-11 takes bands away and sets them against each other (what it reads its label from).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from torch import nn

from vitheory.core.checkpoint import save_checkpoint, seed_folder
from vitheory.core.config import NON_NEGATIVE, Rule, Section, Violation, at_least, knob
from vitheory.core.metrics import class_mistakes
from vitheory.images.params import RecipeParams
from vitheory.images.recipe import FitTask
from vitheory.images.training import LoadedImages, build_model, run_tasks
from vitheory.pk22.noise import band_mask

COLUMNS = {"model": str, "seed": int, "cutoff": float, "clean_accuracy": float, "low_accuracy": float,
           "high_accuracy": float, "low_cue": float, "high_cue": float}
MODELS = ("vit", "cnn")  # train_real's, on natural images
CONTROL = "control"  # the CNN trained on low-passed images, the table's model name for it


@dataclass(frozen=True)
class FrequencyParams(Section):
    """params.yaml `pk_frequency`: the filters of PK-11 and its positive control's training."""

    cutoffs: tuple[float, ...] = knob(Rule(lambda v: 0 < v < 1, "in (0, 1) (units of pi)"))
    control_cutoff: float = knob(Rule(lambda v: 0 < v < 1, "in (0, 1) (units of pi)"))
    control_epochs: int = knob(at_least(1))
    seed: int = knob(NON_NEGATIVE)  # of the cue-conflict pairs

    def relations(self) -> Iterator[Violation]:
        if self.control_cutoff not in self.cutoffs:
            yield "control_cutoff", self.control_cutoff, f"one of cutoffs ({list(self.cutoffs)}): the control is read there"


def low_pass(x: torch.Tensor, cutoff: float) -> torch.Tensor:
    """(B, C, H, W) images keeping the frequencies of radius max(|f_x|, |f_y|) <= cutoff (units of pi), the
    square rings of PK-5's noise (vitheory.pk22.noise.band_mask), frequency 0 included."""
    mask = band_mask(*x.shape[-2:], 0.0, 2 * cutoff).to(x.device)
    return torch.fft.ifft2(torch.fft.fft2(x.double()) * mask).real.to(x.dtype)


def high_pass(x: torch.Tensor, cutoff: float) -> torch.Tensor:
    """The rest: every frequency of radius above `cutoff`; low_pass + high_pass is the image."""
    return x - low_pass(x, cutoff)


def partners(y: torch.Tensor, seed: int) -> torch.Tensor:
    """For each image, another of a different class: a seeded shuffle, each image taking the next one
    along it whose class differs from its own."""
    if len(y.unique()) < 2:
        raise ValueError("a cue conflict needs images of two classes at least")
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed)).to(y.device)
    labels = y[order]
    partner = torch.empty_like(order)
    for i in range(len(order)):
        j = (i + 1) % len(order)
        while labels[j] == labels[i]:
            j = (j + 1) % len(order)
        partner[order[i]] = order[j]
    return partner


@torch.no_grad()
def _accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    return float((~class_mistakes(model(x), y)).float().mean())


@torch.no_grad()
def frequency_rows(name: str, seed: int, model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                   cfg: FrequencyParams) -> list[tuple]:
    """One model's rows of `COLUMNS`, one per cutoff: its accuracy on the clean, low-passed and
    high-passed images, and on the cue conflicts (low-pass of an image plus high-pass of its partner) the
    share read as the low-pass image's label and as the partner's."""
    model.eval()
    partner = partners(y, cfg.seed)
    clean = _accuracy(model, x, y)
    rows = []
    for cutoff in cfg.cutoffs:
        low, high = low_pass(x, cutoff), high_pass(x, cutoff)
        predicted = model(low + high[partner]).argmax(dim=1)
        rows.append((name, seed, cutoff, clean, _accuracy(model, low, y), _accuracy(model, high, y),
                     float((predicted == y).float().mean()), float((predicted == y[partner]).float().mean())))
    return rows


def train_control(cnn: Section, real: RecipeParams, cfg: FrequencyParams, data: LoadedImages,
                  device: torch.device, folder: Path) -> list[nn.Module]:
    """The positive control, one per seed of `real.seeds`: train_real's CNN trained by its recipe for
    `cfg.control_epochs` epochs on the training images low-passed at `cfg.control_cutoff`; each saved under
    `folder`/seed_<s>/."""
    build = partial(build_model, cnn, data.image_size, data.channels, data.n_classes)
    x = low_pass(data.x["train"], cfg.control_cutoff).cpu()
    tasks = [FitTask(build, real, x, data.y["train"].cpu(), cfg.control_epochs, seed, {},
                     desc=f"low-pass control seed {seed}") for seed in range(real.seeds)]
    models = []
    for seed, result in enumerate(run_tasks(tasks, device)):
        model = build()
        model.load_state_dict(result.weights)
        save_checkpoint(folder / seed_folder(seed), model.eval(), {
            "stage": "pk_frequency", "model": CONTROL, "seed": seed, "epochs": cfg.control_epochs,
            "cutoff": cfg.control_cutoff})
        models.append(model.to(device).eval())
    return models
