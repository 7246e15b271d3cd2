"""Stage `train_li_vit`: train the [LI23] shallow ViT and follow its attention (claim LI-3)."""

import argparse
from dataclasses import asdict

from dvclive import Live

from vitheory import li_tokens
from vitheory.analysis import reference_masses
from vitheory.artifacts import atomic_path, write_json
from vitheory.checkpoint import save_checkpoint
from vitheory.cli import run_stage
from vitheory.ensemble import resolve_device
from vitheory.history import History
from vitheory.params import Params
from vitheory.train import train_li_vit


def main(params: Params, args: argparse.Namespace) -> None:
    cfg = params.train.li_vit
    train = li_tokens.load_split(args.data, "train")
    test = li_tokens.load_split(args.data, "test")
    data_meta = li_tokens.load_meta(args.data)
    device = resolve_device(params.train.device)
    history = History(model="li_vit", seed=cfg.seed)
    with atomic_path(args.live) as live_dir, Live(str(live_dir), dvcyaml=False, save_dvc_exp=False) as live:
        def on_log(step: int, metrics: dict[str, dict[str, float]]) -> None:
            history.add(step, metrics)
            live.step = step
            for split, values in metrics.items():
                for name, value in values.items():
                    live.log_metric(f"{split}/{name}", value)
            live.next_step()

        model = train_li_vit(train, test, cfg, device, on_log=on_log)
    save_checkpoint(args.model, model, {"stage": "train_li_vit", "train": asdict(cfg),
                                        "data": data_meta["params"], "device": device.type})
    history.write(args.history)
    write_json(args.metrics, {
        "device": device.type,
        "steps": cfg.steps,
        "initial": history.at_step(0),
        "final": history.at_step(cfg.steps),
        "reference": reference_masses(params.generate.li_tokens),
    })


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True, help="folder written by the generate stage")
    parser.add_argument("--model", required=True, help="checkpoint folder to write")
    parser.add_argument("--metrics", required=True, help="summary metrics JSON to write")
    parser.add_argument("--history", required=True, help="long-form CSV of the logged series")
    parser.add_argument("--live", required=True, help="DVCLive folder")
    run_stage(main, parser)
