"""Stage `control`: the vanilla ViT and the linear model on [JSL22]'s negative control (claim JSL-3)."""

import argparse

from vitheory import spatial
from vitheory.artifacts import write_json
from vitheory.cli import run_stage
from vitheory.ensemble import resolve_device
from vitheory.jsl import summarize, train_control, train_glm
from vitheory.params import Params


def main(params: Params, args: argparse.Namespace) -> None:
    cfg, data_cfg = params.control, params.generate.spatial_control
    splits = {name: spatial.load(args.data, name, spatial.CONTROL_TENSORS) for name in ("train", "test")}
    train, test = ((splits[name]["X"], splits[name]["y"]) for name in ("train", "test"))
    sets = spatial.load(args.data, "structure", ("sets", "filters"))["sets"]
    device = resolve_device(params.train.device)
    vit = train_control(cfg, train, test, sets, device)
    glm = train_glm(cfg.glm, cfg.seeds, "control", train, test, device)
    write_json(args.metrics, {
        "device": device.type,
        "seeds": cfg.seeds,
        "chance": spatial.chance_association(data_cfg.n_patches, data_cfg.set_size),
        "vit": summarize(vit.metrics),
        "glm": summarize(glm.metrics),
    })


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True, help="control folder written by generate_spatial")
    parser.add_argument("--metrics", required=True, help="summary metrics JSON to write")
    run_stage(main, parser)
