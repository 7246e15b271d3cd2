"""REPORT.md: the claims table, one section per paper with its figures, and the provenance."""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from vitheory.params import Params

PAPERS = {
    "LI23": ("Li, Wang, Liu, Chen. A Theoretical Understanding of Shallow Vision Transformers: "
             "Learning, Generalization, and Sample Complexity. ICLR 2023, arXiv 2302.06015."),
    "JSL22": ("Jelassi, Sander, Li. Vision Transformers provably learn spatial structure. NeurIPS 2022, "
              "arXiv 2210.09221."),
    "PK22": "Park, Kim. How Do Vision Transformers Work? ICLR 2022, arXiv 2202.06709.",
}
SOURCES = ("vitheory", "stages", "dvc.yaml", "params.yaml")  # what decides the results
PACKAGES = ("torch", "numpy", "safetensors", "dvc", "dvclive", "pandas", "matplotlib", "seaborn")


def params_digest(params: Params) -> str:
    """sha256 of the validated params (canonical JSON): equal digests, equal settings."""
    canonical = json.dumps(asdict(params), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _verdict(record: dict[str, Any]) -> str:
    return "**holds**" if record["holds"] else "**does not hold**"


def claims_table(records: list[dict[str, Any]]) -> list[str]:
    lines = ["| paper | claim | measured | threshold | verdict |", "| --- | --- | --- | --- | --- |"]
    for r in records:
        measured = ", ".join(f"{q} = {_fmt(r['measured'][q])}" for q in r["threshold"])
        threshold = ", ".join(f"{q} {t}" for q, t in r["threshold"].items())
        lines.append(f"| [{r['paper']}] | {r['id']} | {measured} | {threshold} | {_verdict(r)} |")
    return lines


def regimes(params: Params) -> dict[str, str]:
    """Where each claim's defaults sit, from the params the run used (the README says why)."""
    tokens, li_vit, phase, sparse = params.generate.li_tokens, params.train.li_vit, params.phase, params.sparsify
    phase_setting = (
        f"Sample size limits: noise radius {phase.data.noise_radius} against unit patterns, "
        f"{phase.data.n_tokens} tokens, alpha# = {phase.data.confusion_ratio} x alpha*, N from "
        f"{min(phase.n_train)} to {max(phase.n_train)}, {phase.seeds} seeds, at most {phase.steps} SGD steps "
        f"(a run stops at zero training loss); mixing learning rates {phase.vit.lr_mixing} (ViT) and "
        f"{phase.cnn.lr_mixing} (CNN) x {phase.alpha_ref} / alpha*.")
    return {
        "LI-1": phase_setting,
        "LI-2": phase_setting + " The 1/alpha* learning-rate scaling shortens the runs at small alpha*.",
        "LI-3": (f"Easy, low-noise regime where attention has time to concentrate: noise radius "
                 f"{tokens.noise_radius}, {tokens.n_relevant} relevant and {tokens.n_confusion} confusion tokens "
                 f"of {tokens.n_tokens}; lr {li_vit.lr_attention} on W_Q, W_K and {li_vit.lr_mlp} on W_V, W_O."),
        "LI-4": (f"A regime where the full-data ViT generalises imperfectly: {sparse.data.n_train} training "
                 f"examples, noise norms uniform up to {sparse.data.noise_radius} ({sparse.data.noise_dist}), "
                 f"alpha* = {sparse.data.alpha_star}, alpha# = {sparse.data.alpha_confusion}; a kind oracle's "
                 f"keep ratio applies to the tokens of its kind."),
    } | _jsl_regimes(params) | _real_regimes(params) | _pk_regimes(params)


def _pk_regimes(params: Params) -> dict[str, str]:
    cfg = params.pk
    models = (f"The natural-image ViT and CNN of `train_real` ({params.real.seeds} seeds each, dataset "
              f"`{params.images.dataset}`), on {cfg.n_images} test images.")
    trainings = (f"With train_real's recipe and {params.real.seeds} seeds: the ViT and the CNN on class-balanced "
                 f"fractions {list(params.pk_train.fractions)} of the training images (and all of them, train_real's "
                 f"models); AlterNet with widths {list(params.pk_train.alternet.widths)} and blocks "
                 f"{list(params.pk_train.alternet.blocks)} (the last of each stage an attention block) against a CNN "
                 f"of the same shape with conv blocks only.")
    return {
        "PK-1": trainings,
        "PK-6": trainings,
        "PK-2": models + (f" Top {cfg.hessian_top} eigenvalues by magnitude on {cfg.hessian_batches} training "
                          f"mini-batches of {cfg.hessian_batch_size} per model and seed; cross-entropy only (AdamW's "
                          "decay is not part of the loss)."),
        "PK-3": models + " Feature maps: the embedded input and every block's output, class token dropped.",
        "PK-4": models + " Feature maps: the embedded input and every block's output, class token dropped.",
        "PK-5": models + (f" Noise bands {list(cfg.frequencies)} (units of pi, radius max(|f_x|, |f_y|), "
                          f"bandwidth {cfg.bandwidth}), root-mean-square {cfg.noise_rms} in normalised pixels."),
    }


def _real_regimes(params: Params) -> dict[str, str]:
    data, real, sparse = params.images, params.real, params.sparsify_real
    vit = real.models.vit
    training = (f"Dataset `{data.dataset}` (train fraction {data.train_fraction}, val {data.val_fraction}); "
                f"ViT: patch {vit.patch}, depth {vit.depth}, {vit.heads} heads, width {vit.width}, {vit.pool} "
                f"pooling; CNN: widths {list(real.models.cnn.widths)}, blocks {list(real.models.cnn.blocks)}; "
                f"AdamW lr {real.lr}, weight decay {real.weight_decay}, cosine schedule, {real.epochs} epochs, "
                f"batch {real.batch_size}, shifts up to {real.shift} px; {real.seeds} seeds.")
    return {
        "JSL-5": training + (f" One fixed permutation (seed {real.permutation_seed}) moving "
                             f"{real.permutation_block} x {real.permutation_block} squares of pixels."),
        "JSL-6": training,
        "LI-5": training + (f" Kept tokens {list(sparse.keep_tokens)} and half; fine-tune {sparse.finetune_epochs} "
                            f"epochs at lr {sparse.finetune_lr}; spurious marker: a class-specific patch set to "
                            f"the brightest value on a share {sparse.spurious.correlation} of training images "
                            f"({sparse.spurious.epochs} epochs)."),
    }


def _jsl_regimes(params: Params) -> dict[str, str]:
    data, control_data = params.generate.spatial, params.generate.spatial_control
    spatial, control, transfer = params.spatial, params.control, params.transfer
    n_sets = data.n_patches // data.set_size
    data_setting = (
        f"D = {data.n_patches} patches ({data.partition} sets of C = {data.set_size}, L = {n_sets}), d = {data.dim}, "
        f"q = {data.q}: q (D - C) = {data.q * (data.n_patches - data.set_size):.3g} random features against C "
        f"informative ones; sigma^2 = {data.noise_scale}/d; {data.n_train} training examples.")
    vit_setting = (
        f" Score form `{spatial.vit.score_form}`, d_p = {spatial.vit.pos_dim}, {spatial.seeds} seeds, "
        f"{spatial.steps} full-batch gradient-descent steps on the logistic loss, lr {spatial.lr_mixing} on the "
        f"attention and {spatial.lr_readout} on v.")
    return {
        "JSL-1": data_setting + vit_setting,
        "JSL-2": data_setting + vit_setting + (
            f" Ablation: score forms {', '.join(spatial.ablation)} at mixing rates "
            f"{', '.join(f'{lr:g}' for lr in spatial.ablation_lr_mixing)}; their attention-map association is "
            "listed (a free score matrix has no P)."),
        "JSL-3": (f"D = {control_data.n_patches} i.i.d. N(0, I) patches in d = {control_data.dim}, teacher of "
                  f"{control_data.teacher_width} cubic filter(s), one per position in a set of "
                  f"{control_data.set_size}; vanilla ViT with m = {control.vit.width}, {control.seeds} seeds, "
                  f"{control.steps} gradient-descent steps, {control_data.n_train} training examples."),
        "JSL-4": (f"Downstream feature w' orthogonal to w*, same sets; n in {list(transfer.n_train)}, one "
                  f"pre-trained model per seed; fine-tuning trains a fresh v for {transfer.finetune_steps} steps "
                  f"at lr {transfer.finetune_lr}; scratch uses the pre-training recipe. A run whose loss "
                  "diverges counts as error 1."),
    }


def claim_section(record: dict[str, Any], regime: str) -> list[str]:
    lines = [f"### {record['id']}: {_verdict(record)}", "", record["statement"], "",
             f"*Setting:* {regime}", "",
             f"*Measured:* {record['metric']}.", "", "| quantity | value | threshold |", "| --- | --- | --- |"]
    for quantity, value in record["measured"].items():
        lines.append(f"| {quantity} | {_fmt(value)} | {record['threshold'].get(quantity, '')} |")
    lines.append("")
    for path in record["evidence"]:
        lines.append(f"![{path}]({path})" if path.endswith(".png") else f"Data: [`{path}`]({path})")
        lines.append("")
    return lines


def source_revision(root: Path) -> str:
    """The git commit of the code and params a run used, naming what differed from it (or why none)."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)

    try:
        head = git("rev-parse", "HEAD")
    except OSError:
        return "unknown (git is not installed)"
    if head.returncode != 0:
        return "unknown (not a git checkout)"
    changed = git("status", "--porcelain", "--", *SOURCES).stdout.splitlines()
    paths = sorted(line[3:] for line in changed)
    return f"`{head.stdout.strip()}`" + (f", with uncommitted changes to {', '.join(paths)}" if paths else "")


def render_report(records: list[dict[str, Any]], params: Params, params_text: str,
                  devices: dict[str, str], revision: str) -> str:
    """The whole REPORT.md. `devices` maps each training stage to the device it ran on; `revision` is
    `source_revision`'s line."""
    held = sum(r["holds"] for r in records)
    lines = ["# vitheory report", "",
             "Generated by `dvc repro` (stage `report`); every verdict below is computed from the "
             "measured numbers, never written by hand.", "",
             f"**{held} of {len(records)} claims hold.**", ""]
    lines += claims_table(records) + [""]
    settings = regimes(params)
    for paper, citation in PAPERS.items():
        lines += [f"## [{paper}] {citation}", ""]
        for record in (r for r in records if r["paper"] == paper):
            lines += claim_section(record, settings.get(record["id"], "see params below."))
    versions = {"python": platform.python_version()} | {p: metadata.version(p) for p in PACKAGES}
    lines += ["## Provenance", "",
              f"- git commit: {revision}",
              "- every dependency (code, params, data) and output of every stage is hashed in `dvc.lock`; "
              "`python -m vitheory.verify` checks them and re-derives every claim from the raw artifacts",
              f"- params digest (sha256 of the validated params): `{params_digest(params)}`",
              "- devices: " + ", ".join(f"{stage} on {device}" for stage, device in devices.items()),
              "- versions: " + ", ".join(f"{name} {version}" for name, version in versions.items()),
              "", "Params used (`params.yaml`):", "", "```yaml", params_text.rstrip(), "```", ""]
    return "\n".join(lines)
