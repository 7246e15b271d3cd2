"""Stage `train_real`: one model preset on the prepared real images, natural or under one fixed pixel
permutation, over seeds (claims JSL-5, JSL-6; the checkpoints feed LI-5)."""

import argparse
import statistics
import sys
from dataclasses import asdict
from pathlib import Path

from dvclive import Live

from vitheory.artifacts import atomic_path, write_json
from vitheory.checkpoint import save_checkpoint
from vitheory.cli import run_stage
from vitheory.ensemble import resolve_device, seeded
from vitheory.params import Params
from vitheory.real import build_model, evaluate, fit, load_images, permute_pixels, pixel_permutation
from vitheory.resume import Resume, fingerprint


def main(params: Params, args: argparse.Namespace) -> None:
    cfg = params.real
    preset = getattr(cfg.models, args.model)
    device = resolve_device(params.train.device)
    data = load_images(args.data, ("train", "val", "test"), device)
    x, y, normalize = data.x, data.y, data.normalize
    permutation = (pixel_permutation(data.image_size, data.image_size, cfg.permutation_block, cfg.permutation_seed)
                   if args.pixels == "permuted" else None)
    held_out = {name: permute_pixels(x[name], permutation) for name in ("val", "test")}

    def build():
        return build_model(preset, data.image_size, data.channels, data.n_classes)

    resume = Resume(args.resume, fingerprint({"args": vars(args), "real": asdict(cfg), "device": device.type},
                                             [args.data]), f"train_real@{args.model}-{args.pixels}")
    runs = []
    with atomic_path(args.models) as models, atomic_path(args.live) as live_dir, \
            Live(str(live_dir), dvcyaml=False, save_dvc_exp=False) as live:
        models.mkdir()

        def log(epoch: int, metrics: dict[str, float]) -> None:
            live.step = epoch
            for name, value in sorted(metrics.items()):  # a replayed log keeps its order
                live.log_metric(name, value)
            live.next_step()

        for seed in range(cfg.seeds):
            model = seeded(seed, build).to(device)
            state = resume.run(f"seed_{seed}")
            for epoch, metrics in enumerate(state.log, start=1):  # the epochs a killed run logged
                log(epoch, metrics)
            if state.epoch:
                print(f"seed {seed}: resuming after epoch {state.epoch} of {cfg.epochs}", file=sys.stderr)

            def evaluate_and_log(epoch: int, seed: int = seed, model=model) -> dict[str, float]:
                metrics = {f"seed_{seed}/{name}/{metric}": value for name in ("val", "test")
                           for metric, value in evaluate(model, held_out[name], y[name]).items()}
                log(epoch, metrics)
                return metrics

            fit(model, x["train"], y["train"], cfg, epochs=cfg.epochs, seed=seed, permutation=permutation,
                on_epoch=evaluate_and_log, state=state, desc=f"{args.model} {args.pixels} seed {seed}")
            final = {name: evaluate(model, held_out[name], y[name]) for name in ("val", "test")}
            runs.append({"seed": seed, "val_accuracy": final["val"]["accuracy"],
                         "test_accuracy": final["test"]["accuracy"], "test_loss": final["test"]["loss"]})
            save_checkpoint(Path(models) / f"seed_{seed}", model.cpu(), {
                "stage": "train_real", "model": args.model, "pixels": args.pixels, "seed": seed,
                "permutation": permutation.tolist() if permutation is not None else None,
                "normalize": {"mean": normalize.mean.tolist(), "std": normalize.std.tolist()},
                "train": asdict(cfg), "data": asdict(params.images), "device": device.type})
    accuracies = [run["test_accuracy"] for run in runs]
    resume.finish()
    write_json(args.metrics, {
        "device": device.type, "model": args.model, "pixels": args.pixels,
        "n_parameters": sum(p.numel() for p in build().parameters()),
        "test_accuracy_mean": statistics.mean(accuracies),
        "test_accuracy_std": statistics.stdev(accuracies) if len(accuracies) > 1 else 0.0,
        "test_accuracy_min": min(accuracies), "test_accuracy_max": max(accuracies),
        "runs": {f"seed_{run['seed']}": run for run in runs},
    })


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, choices=["vit", "vit_positional", "cnn"])
    parser.add_argument("--pixels", required=True, choices=["natural", "permuted"])
    parser.add_argument("--data", required=True, help="folder written by prepare_images")
    parser.add_argument("--models", required=True, help="folder for the checkpoints (seed_<s>/)")
    parser.add_argument("--metrics", required=True, help="summary metrics JSON to write")
    parser.add_argument("--live", required=True, help="DVCLive folder")
    parser.add_argument("--resume", required=True, help="folder of the resumable training state")
    run_stage(main, parser)
