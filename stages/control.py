"""Stage `control`: the multi-head ViT and the linear model on [JSL22]'s negative control (claim JSL-3),
and the same ViT, trained the same way, on Assumption-1 data of the control's size, where association
is present: the positive control of the association measure."""

import argparse

from vitheory.core.artifacts import read_split, write_json
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.device import DEVICE, resolve_device
from vitheory.core.ensemble import Stability
from vitheory.core.paths import artifact
from vitheory.jsl22.data import CONTROL_TENSORS, chance_association
from vitheory.jsl22.params import ControlParams, SpatialControlParams
from vitheory.jsl22.training import Trained, read_spatial, train_control, train_glm, training_errors

PARAMS = {"train.device": DEVICE, "train.stability": Stability, "control": ControlParams,
          "generate.spatial_control": SpatialControlParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    cfg, data_cfg = params.control, params.generate.spatial_control
    folder = artifact("spatial_control_data")
    splits = {name: read_split(folder, name, CONTROL_TENSORS) for name in ("train", "test")}
    train, test = ((splits[name]["X"], splits[name]["y"]) for name in ("train", "test"))
    sets = read_split(folder, "structure", ("sets", "filters"))["sets"]
    device = resolve_device(params.train.device)
    vit = train_control(cfg, params.train.stability, train, test, sets, device)
    glm = train_glm(cfg.glm, cfg.seeds, "control", train, test, device)
    for metrics, train_error in zip(vit.metrics, training_errors(vit.models, *train)):
        metrics["train_error_rate"] = train_error
    positive_train, positive_test, structure = read_spatial(artifact("spatial_positive_data"))
    positive = train_control(cfg, params.train.stability, positive_train, positive_test, structure["sets"], device)
    chance = chance_association(data_cfg.n_patches, data_cfg.set_size)  # both data sets: the same D and C
    # per-seed runs and the settings the claim reads: every median is the claim's own (vitheory.jsl22.claims)
    write_json(artifact("control_metrics"), {
        "device": device.type,
        "seeds": cfg.seeds,
        "chance": chance,
        "positive_control": {"chance": chance, "initial": positive.initial_metrics,
                             "final": stability_marked(positive)},
        "runs": {"vit": stability_marked(vit), "glm": glm.metrics},
    })


def stability_marked(trained: Trained) -> list[dict]:
    """Each seed's final metrics with its halvings of the rates and whether it stayed unstable (the claim leaves
    it out of its units, vitheory.jsl22.claims)."""
    return [metrics | {"unstable": unstable, "halvings": halvings}
            for metrics, unstable, halvings in zip(trained.metrics, trained.unstable, trained.halvings, strict=True)]


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
