"""Stage `train_li_vit`: train the [LI23] shallow ViT over seeds and follow its attention (claim LI-3)."""

import argparse
from dataclasses import asdict

from vitheory.core.artifacts import atomic_path, read_meta, write_json
from vitheory.core.checkpoint import save_checkpoint, seed_folder
from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.device import DEVICE, resolve_device
from vitheory.core.history import History, live_run, log_step, write_histories
from vitheory.core.paths import artifact
from vitheory.li23 import tokens
from vitheory.li23.attention import mean_over_seeds, reference_masses, train_li_vit
from vitheory.li23.params import LiTokensParams, LiVitTrainParams

PARAMS = {"train.device": DEVICE, "train.li_vit": LiVitTrainParams, "generate.li_tokens": LiTokensParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    cfg = params.train.li_vit
    train, test = (tokens.load_split(artifact("li_tokens"), split) for split in ("train", "test"))
    device = resolve_device(params.train.device)
    histories = [History(model="li_vit", seed=cfg.seed + i) for i in range(cfg.seeds)]
    with live_run(artifact("li_vit_live")) as live:
        def on_log(step: int, per_seed: list[dict[str, dict[str, float]]]) -> None:
            for history, metrics in zip(histories, per_seed):
                history.add(step, metrics)
            log_step(live, step, {f"{split}/{name}": value for split, values in mean_over_seeds(per_seed).items()
                                  for name, value in values.items()})

        models = train_li_vit(train, test, cfg, device, on_log=on_log)
    meta = {"stage": "train_li_vit", "train": asdict(cfg), "data": read_meta(artifact("li_tokens"))["params"],
            "device": device.type}
    with atomic_path(artifact("li_vit")) as folder:
        folder.mkdir()
        for history, model in zip(histories, models):
            save_checkpoint(folder / seed_folder(history.seed), model, meta | {"seed": history.seed})
    write_histories(artifact("li_vit_history"), histories)
    runs = [{"seed": h.seed, "initial": h.at_step(0), "final": h.at_step(cfg.steps)} for h in histories]
    write_json(artifact("li_vit_metrics"), {
        "device": device.type,
        "steps": cfg.steps,
        "runs": runs,
        "reference": reference_masses(params.generate.li_tokens),
    })


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
