"""Stage `train_spatial`: the positional-attention ViT over seeds on the [JSL22] data, each other score
form as an ablation, and the generalized linear model (claims JSL-1, JSL-2); the ViT and the linear
model once more on the variant partition's data (their second setting)."""

import argparse

import numpy as np
import torch

from vitheory.core.artifacts import atomic_path, read_meta, write_json, write_tensors
from vitheory.core.checkpoint import save_checkpoint
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView, as_dict
from vitheory.core.device import DEVICE, resolve_device
from vitheory.core.ensemble import Stability
from vitheory.core.history import live_run, write_histories
from vitheory.core.paths import artifact
from vitheory.core.similarity import cosine_similarity
from vitheory.jsl22.data import chance_association
from vitheory.jsl22.params import SpatialDataParams, SpatialTrainParams
from vitheory.jsl22.training import (
    VARIANT_FOLDER,
    Trained,
    best_linear_error,
    member_folder,
    read_spatial,
    train_glm,
    train_positional,
    train_spatial,
)

PARAMS = {"train.device": DEVICE, "train.stability": Stability, "spatial": SpatialTrainParams,
          "generate.spatial": SpatialDataParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    cfg, data_cfg, stability = params.spatial, params.generate.spatial, params.train.stability
    train, test, structure = read_spatial(artifact("spatial_data"))
    variant_train, variant_test, variant_structure = read_spatial(artifact("spatial_variant_data"))
    device = resolve_device(params.train.device)
    with live_run(artifact("spatial_live")) as live:
        vit, ablation, glm, histories = train_spatial(cfg, stability, train, test, structure["sets"], device, live)
    variant_vit = train_positional(cfg.vit, cfg, stability, variant_train, variant_test, variant_structure["sets"],
                                   device,
                                   data_label=f", {data_cfg.variant_partition} partition")
    variant_glm = train_glm(cfg.glm, cfg.seeds, "spatial", variant_train, variant_test, device)
    with atomic_path(artifact("spatial_models")) as tmp:
        tmp.mkdir()
        meta = {"stage": "train_spatial", "spatial": as_dict(cfg), "data": as_dict(data_cfg), "device": device.type}
        # a ViT's checkpoint says whether it was unstable (it stopped where it diverged): transfer has nothing to
        # transfer
        for seed in range(cfg.seeds):
            save_checkpoint(tmp / member_folder("vit", seed), vit.models[seed],
                            meta | {"seed": seed, "unstable": vit.unstable[seed], "halvings": vit.halvings[seed]})
            save_checkpoint(tmp / member_folder("glm", seed), glm.models[seed], meta | {"seed": seed})
            save_checkpoint(tmp / VARIANT_FOLDER / member_folder("vit", seed), variant_vit.models[seed],
                            meta | {"seed": seed, "partition": data_cfg.variant_partition,
                                    "unstable": variant_vit.unstable[seed], "halvings": variant_vit.halvings[seed]})
        write_tensors(tmp / artifact("spatial_gram").relative_to(artifact("spatial_models")), {
            "initial": torch.tensor(np.stack([cosine_similarity(m.P) for m in vit.initial])),
            "final": torch.tensor(np.stack([cosine_similarity(m.P) for m in vit.models])),
            "sets": structure["sets"],
        })
    write_histories(artifact("spatial_history"), histories)
    # per-seed runs and the settings the claims read: every median is the claims' own (vitheory.jsl22.claims)
    write_json(artifact("spatial_metrics"), {
        "device": device.type,
        "score_form": cfg.vit.score_form,
        "seeds": cfg.seeds,
        "f_star_test_agreement": read_meta(artifact("spatial_data"))["f_star_test_agreement"],
        "chance": chance_association(data_cfg.n_patches, data_cfg.set_size),
        "best_linear_error": best_linear_error(*test, structure["w_star"]),
        "variant": {
            "partition": data_cfg.variant_partition,
            "best_linear_error": best_linear_error(*variant_test, variant_structure["w_star"]),
            "runs": {"vit": positional_runs(variant_vit), "glm": variant_glm.metrics},
        },
        "runs": {"glm": glm.metrics,
                 **{name: positional_runs(trained) for name, trained in {"vit": vit, **ablation}.items()}},
    })


def positional_runs(trained: Trained) -> dict[str, list]:
    """A positional ViT's per-seed metrics at initialisation and after training, each seed's halvings of the
    rates and which seeds stayed unstable (the claims leave those out of their units, vitheory.jsl22.claims)."""
    return {"initial": trained.initial_metrics, "final": trained.metrics, "unstable": trained.unstable,
            "halvings": trained.halvings}


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
