"""[PK22] in the paper table (vitheory.papers): its params sections, its rules across them, its claims,
its figures and verify's re-derivations."""

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import torch

from vitheory.core.config import Violation
from vitheory.core.package import Package
from vitheory.images.datasets import DatasetUnavailable, read_digits, read_fashion_mnist, split_indices
from vitheory.pk22 import figures, params, rederive
from vitheory.pk22.buildup import BuildUpParams, placement_violations
from vitheory.pk22.claims import NOISE_DECIDES, PAPER, SHARE_COMPARISONS
from vitheory.pk22.frequency import FrequencyParams
from vitheory.pk22.hessian import check_batches
from vitheory.pk22.landscape import LandscapeParams
from vitheory.pk22.locality import LocalityParams
from vitheory.pk22.trainings import fraction_index


def offline_training_labels(images: Any) -> torch.Tensor | None:
    """The training split's labels as `prepare_images` makes them, for a dataset built or read here
    (scikit-learn's digits, bare or on cluttered canvases, `copies` per digit; Fashion-MNIST's local files);
    None for one that is downloaded, or Fashion-MNIST's files missing or damaged (prepare_images says so)."""
    if images.dataset == "fashion_mnist":
        try:
            labels = read_fashion_mnist(Path(images.fashion_mnist_path)).train.y
        except DatasetUnavailable:
            return None
        return labels[split_indices(labels, val_fraction=images.val_fraction, test_fraction=None,
                                    train_fraction=images.train_fraction, seed=images.seed)["train"]]
    if images.dataset not in ("digits", "cluttered_digits"):
        return None
    labels = read_digits().train.y
    index = split_indices(labels, val_fraction=images.val_fraction, test_fraction=images.test_fraction,
                          train_fraction=images.train_fraction, seed=images.seed)["train"]
    copies = images.cluttered.copies if images.dataset == "cluttered_digits" else 1
    return labels[index].repeat(copies)


def hessian_fits_smallest_fraction(whole: Any) -> None:
    """pk_analysis's Hessian mini-batches must fill from the images of pk_train's smallest fraction (vit_small's):
    checked by the params check, before any stage trains, where the training images are known without a
    download (the check in pk_analysis stays for the others). An atlas point of a smaller
    images.train_fraction fails there in seconds, not in pk_analysis after the image stages' trainings.
    Raises pk_analysis's own ParamsError, so that both say the same."""
    labels = offline_training_labels(whole.images)
    if labels is not None:
        smallest, share = min(whole.pk_train.fractions), whole.images.train_fraction
        check_batches(len(fraction_index(labels, smallest, whole.images.seed)), whole.pk,
                      f"vit_small (pk_train.fractions {smallest:g} of images.train_fraction {share:g})")


def relations(whole: Any) -> Iterator[Violation]:
    """The rules across [PK22]'s sections and the ones it reads (vitheory.pk22.params), then the Hessian's
    batches against the smallest fraction's training images."""
    yield from params.relations(whole)
    hessian_fits_smallest_fraction(whole)
    # PK-12 compares the windowed ViTs' Hessians with the global ViT's on pk_analysis's same first mini-batches
    if whole.pk_locality.hessian_batches > whole.pk.hessian_batches:
        yield ("pk_locality.hessian_batches", whole.pk_locality.hessian_batches,
               f"<= pk.hessian_batches ({whole.pk.hessian_batches}): the global ViT's are pk_analysis's")
    yield from ((f"pk_buildup.{key}", value, allowed)
                for key, value, allowed in placement_violations(whole.pk_train.alternet, whole.pk_buildup))


# the figures mark what the claims decide on: PK-5's normalisation of the noise, PK-2's comparisons
# PK-10's to PK-13's sections beside pk22/params.py's: their stages came after the image stages' committed run
SECTIONS = {**params.SECTIONS, "pk_landscape": LandscapeParams, "pk_frequency": FrequencyParams,
            "pk_locality": LocalityParams, "pk_buildup": BuildUpParams}
PACKAGE = Package(name="pk22", params=SECTIONS, relations=relations, paper=PAPER,
                  render=partial(figures.render, noise_decides=NOISE_DECIDES,
                                 share_comparisons=tuple(SHARE_COMPARISONS.values())),
                  checks=rederive.CHECKS)
