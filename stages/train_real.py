"""Stage `train_real@<model>-<pixels>`: one model preset on the prepared real images, natural or under one
fixed pixel permutation, over seeds (claims JSL-5, JSL-6; the checkpoints feed LI-5 and [PK22])."""

import argparse
from functools import partial

from vitheory.core.artifacts import atomic_path, read_meta, write_json
from vitheory.core.checkpoint import save_checkpoint, seed_folder
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView, as_dict
from vitheory.core.device import DEVICE, resolve_device
from vitheory.core.history import live_run
from vitheory.core.paths import artifact, run_name, runs
from vitheory.core.resume import Resume, fingerprint
from vitheory.images.params import RealTrainParams
from vitheory.images.structure import structure_scores
from vitheory.images.training import build_model, load_images, pixel_permutation, train_seeds

PARAMS = {"train.device": DEVICE, "real": RealTrainParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    cfg, run = params.real, run_name(args.model, args.pixels)
    device = resolve_device(params.train.device)
    data = load_images(artifact("images"), ("train", "val", "test"), device)
    permutation = (pixel_permutation(data.image_size, data.image_size, cfg.permutation_block, cfg.permutation_seed)
                   if args.pixels == "permuted" else None)

    build = partial(build_model, getattr(cfg.models, args.model), data.image_size, data.channels, data.n_classes)

    resume = Resume(artifact("real_resume") / run, fingerprint(
        {"args": vars(args), "real": as_dict(cfg), "device": device.type}, [artifact("images")]))
    with live_run(artifact("real_live") / run) as live:
        trained = train_seeds(build, cfg, data, permutation=permutation, resume=resume, live=live, device=device,
                              desc=f"{args.model} {args.pixels}")
    for model, record in trained:
        record |= structure_scores(model, record["seed"], data.x["train"].cpu(), permutation)
    with atomic_path(artifact("real_models") / run) as models:
        models.mkdir()
        for model, record in trained:
            save_checkpoint(models / seed_folder(record["seed"]), model.cpu(), {
                "stage": "train_real", "model": args.model, "pixels": args.pixels, "seed": record["seed"],
                "permutation": permutation.tolist() if permutation is not None else None,
                "normalize": {"mean": data.normalize.mean.tolist(), "std": data.normalize.std.tolist()},
                "train": as_dict(cfg), "data": read_meta(artifact("images"))["params"], "device": device.type})
    resume.finish()
    write_json(artifact("real_metrics") / f"{run}.json", {
        "device": device.type, "model": args.model, "pixels": args.pixels,
        "n_parameters": sum(p.numel() for p in build().parameters()),
        "runs": {seed_folder(record["seed"]): record for _, record in trained},
    })


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, choices=runs("real_models"))
    parser.add_argument("--pixels", required=True, choices=runs("real_pixels"))
    run_stage(main, parser, PARAMS)
