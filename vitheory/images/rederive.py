"""train_real's per-seed runs re-derived from its checkpoints, for `python -m vitheory.verify`: every
checkpoint evaluated again on the test images (JSL-5, JSL-6), and each ViT's structure scores computed
again from its positional encodings (JSL-5)."""

from __future__ import annotations

from pathlib import Path

import torch

from vitheory.core.artifacts import read_json
from vitheory.core.checkpoint import checkpoint_metadata, load_checkpoint
from vitheory.core.paths import artifact, run_name, runs
from vitheory.core.rederive import Problem, differs, same
from vitheory.images.structure import structure_scores
from vitheory.images.recipe import permute_pixels
from vitheory.images.training import evaluate, load_images


def train_real(root: Path) -> list[Problem]:
    images = load_images(root / artifact("images"), ("train", "test"), torch.device("cpu"))
    problems = []
    for model_name in runs("real_models"):
        for pixels in runs("real_pixels"):
            path = artifact("real_metrics") / f"{run_name(model_name, pixels)}.json"
            stored = read_json(root / path)
            for key, run in sorted(stored["runs"].items()):
                folder = root / artifact("real_models") / run_name(model_name, pixels) / key
                permutation = checkpoint_metadata(folder)["permutation"]
                permutation = None if permutation is None else torch.tensor(permutation)
                model = load_checkpoint(folder)
                accuracy = evaluate(model, permute_pixels(images.x["test"], permutation), images.y["test"])["accuracy"]
                if not same(accuracy, run["test_accuracy"]):
                    problems += differs(path, f"{key}'s test accuracy {run['test_accuracy']:.4f} differs from its "
                                              f"checkpoint's, {accuracy:.4f}")
                for name, score in structure_scores(model, run["seed"], images.x["train"], permutation).items():
                    if not same(score, run.get(name)):
                        problems += differs(path, f"{key}'s {name} {run.get(name)} differs from its checkpoint's, "
                                                  f"{score:.4f}")
    return problems


CHECKS = (train_real,)
