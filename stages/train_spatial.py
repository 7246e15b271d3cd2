"""Stage `train_spatial`: the positional-attention ViT over seeds on the [JSL22] data, each other score
form as an ablation, and the generalized linear model (claims JSL-1, JSL-2)."""

import argparse
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch
from dvclive import Live

from vitheory import spatial
from vitheory.artifacts import atomic_path, write_json, write_tensors
from vitheory.checkpoint import save_checkpoint
from vitheory.cli import run_stage
from vitheory.ensemble import resolve_device
from vitheory.history import History, write_histories
from vitheory.jsl import best_linear_error, summarize, train_glm, train_positional
from vitheory.params import Params


def main(params: Params, args: argparse.Namespace) -> None:
    cfg, data_cfg = params.spatial, params.generate.spatial
    split = {name: spatial.load(args.data, name, spatial.SPLIT_TENSORS) for name in ("train", "test")}
    train, test = ((split[s]["X"], split[s]["y"]) for s in ("train", "test"))
    structure = spatial.load(args.data, "structure", ("sets", "w_star"))
    sets = structure["sets"]
    device = resolve_device(params.train.device)
    histories = {seed: History(model=cfg.vit.score_form, seed=seed) for seed in range(cfg.seeds)}
    initial: list[dict[str, float]] = []
    with atomic_path(args.live) as live_dir, Live(str(live_dir), dvcyaml=False, save_dvc_exp=False) as live:
        def on_log(step: int, per_seed: list[dict[str, float]]) -> None:
            if step == 0:
                initial.extend(per_seed)
            for seed, metrics in enumerate(per_seed):
                histories[seed].add(step, {"test": metrics})
            live.step = step
            for name, value in summarize(per_seed).items():
                if name.endswith("_median"):
                    live.log_metric(f"test/{name.removesuffix('_median')}", value)
            live.next_step()

        vit = train_positional(cfg.vit, cfg, train, test, sets, device, on_log=on_log)
    ablation = {form: train_positional(replace(cfg.vit, score_form=form), cfg, train, test, sets, device)
                for form in cfg.ablation}
    glm = train_glm(cfg.glm, cfg.seeds, "spatial", train, test, device)

    models = Path(args.models)
    with atomic_path(models) as tmp:
        tmp.mkdir()
        meta = {"stage": "train_spatial", "spatial": asdict(cfg), "data": asdict(data_cfg), "device": device.type}
        for seed in range(cfg.seeds):
            save_checkpoint(tmp / "vit" / f"seed_{seed}", vit.models[seed], meta | {"seed": seed})
            save_checkpoint(tmp / "glm" / f"seed_{seed}", glm.models[seed], meta | {"seed": seed})
        write_tensors(tmp / "gram.safetensors", {
            "initial": torch.tensor(np.stack([spatial.cosine_similarity(m.P) for m in vit.initial])),
            "final": torch.tensor(np.stack([spatial.cosine_similarity(m.P) for m in vit.models])),
            "sets": sets,
        })
    write_histories(args.history, list(histories.values()))
    write_json(args.metrics, {
        "device": device.type,
        "score_form": cfg.vit.score_form,
        "seeds": cfg.seeds,
        "f_star_test_agreement": spatial.load_meta(args.data)["f_star_test_agreement"],
        "chance": spatial.chance_association(data_cfg.n_patches, data_cfg.set_size),
        "vit": {"initial": summarize(initial), "final": summarize(vit.metrics)},
        "glm": summarize(glm.metrics),
        "best_linear_error": best_linear_error(*test, structure["w_star"]),
        "ablation": {form: summarize(trained.metrics) for form, trained in ablation.items()},
    })


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True, help="folder written by generate_spatial")
    parser.add_argument("--models", required=True, help="folder for the checkpoints (vit/seed_s, glm/seed_s)")
    parser.add_argument("--metrics", required=True, help="summary metrics JSON to write")
    parser.add_argument("--history", required=True, help="long-form CSV of the logged series")
    parser.add_argument("--live", required=True, help="DVCLive folder")
    run_stage(main, parser)
