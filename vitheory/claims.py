"""The papers' claims as checks: what each claim says, which numbers measure it, and the thresholds.

A verdict is never written by hand: `evaluate` reads the numbers from the pipeline's artifacts and
compares them with the thresholds. Thresholds belong to the claim's definition, not to
params.yaml: they do not move to fit a run. When a claim fails, the report says so with the number.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from vitheory.artifacts import read_json
from vitheory.schemas import by_alpha

OPERATORS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}


@dataclass(frozen=True)
class Criterion:
    """`measured[quantity] <op> threshold` must hold."""

    quantity: str
    op: Literal[">=", "<=", ">", "<"]
    threshold: float

    def holds(self, measured: dict[str, float | None]) -> bool:
        """False when the quantity could not be measured (None), e.g. a fit with too few points."""
        value = measured[self.quantity]
        return value is not None and bool(OPERATORS[self.op](value, self.threshold))

    def __str__(self) -> str:
        return f"{self.quantity} {self.op} {self.threshold:g}"


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str
    statement: str
    metric: str
    criteria: tuple[Criterion, ...]
    evidence: tuple[str, ...]  # artifact paths relative to the reports folder
    measure: Callable[[Path], dict[str, float | None]]  # reads artifacts under the reports folder


def _measure_li3(reports: Path) -> dict[str, float]:
    metrics = read_json(reports / "metrics" / "li_vit.json", "train_li_vit")
    initial, final = metrics["initial"]["test"], metrics["final"]["test"]
    reference = metrics["reference"]
    return {
        "initial": initial["attn_relevant_query"],
        "final": final["attn_relevant_query"],
        "final_over_initial": final["attn_relevant_query"] / initial["attn_relevant_query"],
        "uniform": reference["uniform"],
        "initial_over_uniform": initial["attn_relevant_query"] / reference["uniform"],
        "all_query_initial": initial["attn_all_query"],
        "all_query_final": final["attn_all_query"],
        "all_query_cap": reference["all_query_cap"],
        "test_error_final": final["error_rate"],
    }


def _phase(reports: Path) -> dict[str, Any]:
    return read_json(reports / "metrics" / "phase.json", "phase_fit")["models"]


def _n_min_at_smallest_alpha(fit: dict[str, Any]) -> float:
    """N_min at the smallest alpha*; a censored one (-1: never reached in the grid) counts as infinite."""
    value = by_alpha(fit["n_min"])[0][1]
    return math.inf if value < 0 else value


def _measure_li1(reports: Path) -> dict[str, float | None]:
    models = _phase(reports)
    vit, cnn = models["vit"], models["cnn"]
    n_mins = [math.inf if n < 0 else n for _, n in by_alpha(vit["n_min"])]  # alpha* ascending
    falls = all(a >= b for a, b in zip(n_mins, n_mins[1:])) and n_mins[0] > n_mins[-1]
    smallest_vit, smallest_cnn = _n_min_at_smallest_alpha(vit), _n_min_at_smallest_alpha(cnn)
    return {
        "vit_n_min_falls_as_alpha_grows": float(falls),
        "vit_exponent": vit["n_min_exponent"],
        "vit_exponent_ci_low": vit["n_min_exponent_ci_low"],
        "vit_exponent_ci_high": vit["n_min_exponent_ci_high"],
        "cnn_exponent": cnn["n_min_exponent"],
        "vit_n_min_at_smallest_alpha": by_alpha(vit["n_min"])[0][1],
        "cnn_n_min_at_smallest_alpha": by_alpha(cnn["n_min"])[0][1],
        "cnn_needs_more_samples_at_smallest_alpha": float(smallest_cnn > smallest_vit),
    }


def _measure_li2(reports: Path) -> dict[str, float | None]:
    models = _phase(reports)
    vit = models["vit"]
    return {"vit_steps_exponent": vit["steps_exponent"], "vit_steps_exponent_ci_low": vit["steps_exponent_ci_low"],
            "vit_steps_exponent_ci_high": vit["steps_exponent_ci_high"],
            "cnn_steps_exponent": models["cnn"]["steps_exponent"]}


def _measure_li4(reports: Path) -> dict[str, float | None]:
    loss = read_json(reports / "metrics" / "sparsify.json", "sparsify")["mean_test_loss"]
    measured = {f"loss_{strategy}": value for strategy, value in loss.items()}
    for strategy in ("irrelevant", "noisiest", "confusion", "relevant", "attention", "random"):
        measured[f"{strategy}_minus_none"] = loss[strategy] - loss["none"]
    return measured


def _measure_jsl1(reports: Path) -> dict[str, float]:
    metrics = read_json(reports / "metrics" / "spatial.json", "train_spatial")
    return {"vit_test_error": metrics["vit"]["final"]["error_rate_median"],
            "vit_test_error_max": metrics["vit"]["final"]["error_rate_max"],
            "glm_test_error": metrics["glm"]["error_rate_median"],
            "best_linear_test_error": metrics["best_linear_error"]}


def _measure_jsl2(reports: Path) -> dict[str, float]:
    metrics = read_json(reports / "metrics" / "spatial.json", "train_spatial")
    initial, final, chance = metrics["vit"]["initial"], metrics["vit"]["final"], metrics["chance"]
    measured = {"final_exact": final["pos_exact_median"], "final_exact_min": final["pos_exact_min"],
                "final_overlap": final["pos_overlap_median"], "initial_exact": initial["pos_exact_median"],
                "initial_overlap": initial["pos_overlap_median"], "chance_exact": chance["exact"],
                "chance_overlap": chance["overlap"],
                "initial_exact_minus_chance": initial["pos_exact_median"] - chance["exact"]}
    for form, ablated in metrics["ablation"].items():  # attention maps: a free score matrix has no P
        measured |= {f"{form}_attention_exact": ablated["attn_exact_median"],
                     f"{form}_test_error": ablated["error_rate_median"]}
    return measured


def _measure_jsl3(reports: Path) -> dict[str, float]:
    metrics = read_json(reports / "metrics" / "control.json", "control")
    vit, glm = metrics["vit"], metrics["glm"]
    return {"vit_test_error": vit["error_rate_median"], "glm_test_error": glm["error_rate_median"],
            "vit_minus_glm_test_error": vit["error_rate_median"] - glm["error_rate_median"],
            "exact": vit["pos_exact_median"], "overlap": vit["pos_overlap_median"],
            "exact_minus_chance": vit["pos_exact_median"] - metrics["chance"]["exact"]}


def _measure_jsl4(reports: Path) -> dict[str, float | None]:
    metrics = read_json(reports / "metrics" / "transfer.json", "transfer")
    finetune, scratch = metrics["finetune_n_needed"], metrics["scratch_n_needed"]
    reached = finetune > 0
    # scratch never reaching the target in the grid (-1) counts as needing infinitely many samples
    ratio = (finetune / scratch if scratch > 0 else 0.0) if reached else None
    return {"finetune_n_needed": finetune, "scratch_n_needed": scratch, "finetune_reaches_target": float(reached),
            "finetune_over_scratch": ratio, "diverged_runs": metrics["diverged_runs"]}


def _real(reports: Path, model: str, pixels: str) -> dict[str, Any]:
    return read_json(reports / "real" / f"{model}_{pixels}.json", f"train_real@{model}-{pixels}")


def _measure_jsl5(reports: Path) -> dict[str, float]:
    accuracy = {f"{model}_{pixels}": _real(reports, model, pixels)["test_accuracy_mean"]
                for model in ("vit", "cnn") for pixels in ("natural", "permuted")}
    vit_loss = accuracy["vit_natural"] - accuracy["vit_permuted"]
    cnn_loss = accuracy["cnn_natural"] - accuracy["cnn_permuted"]
    return {"vit_natural": accuracy["vit_natural"], "vit_permuted": accuracy["vit_permuted"],
            "cnn_natural": accuracy["cnn_natural"], "cnn_permuted": accuracy["cnn_permuted"],
            "vit_loss": vit_loss, "cnn_loss": cnn_loss, "cnn_loss_minus_vit_loss": cnn_loss - vit_loss}


def _measure_jsl6(reports: Path) -> dict[str, float]:
    vanilla, positional = _real(reports, "vit", "natural"), _real(reports, "vit_positional", "natural")
    return {"vanilla_mean": vanilla["test_accuracy_mean"], "vanilla_std": vanilla["test_accuracy_std"],
            "positional_mean": positional["test_accuracy_mean"], "positional_std": positional["test_accuracy_std"],
            "positional_minus_vanilla": positional["test_accuracy_mean"] - vanilla["test_accuracy_mean"]}


def _measure_li5(reports: Path) -> dict[str, float]:
    metrics = read_json(reports / "metrics" / "sparsify_real.json", "sparsify_real")
    full = metrics["full_accuracy"]
    measured = {"full_accuracy": full, "kept_tokens": metrics["half"], "patch_tokens": metrics["patches"]}
    for stage in ("finetuned", "inference"):
        attention, random = metrics[f"{stage}_attention_half_accuracy"], metrics[f"{stage}_random_half_accuracy"]
        measured |= {f"{stage}_attention": attention, f"{stage}_random": random,
                     f"{stage}_lowest": metrics[f"{stage}_lowest_half_accuracy"],
                     f"{stage}_attention_loss": full - attention, f"{stage}_attention_minus_random": attention - random}
    for experiment in ("spurious_removed", "spurious_decorrelated"):
        measured |= {f"{experiment}_all": metrics[f"{experiment}_all_accuracy"],
                     f"{experiment}_attention_half": metrics[f"{experiment}_attention_half_accuracy"]}
    return measured


def _pk(reports: Path) -> dict[str, Any]:
    return read_json(reports / "metrics" / "pk.json", "pk_analysis")


def _measure_pk2(reports: Path) -> dict[str, float]:
    metrics = _pk(reports)
    measured = {f"{model}_{key}": metrics[f"{model}_{key}"] for model in ("vit", "cnn", "vit_gap", "vit_small")
                for key in ("nep", "ape")}
    return measured | {"vit_nep_minus_cnn_nep": metrics["vit_nep"] - metrics["cnn_nep"],
                       "small_data_nep_minus_vit_nep": metrics["vit_small_nep"] - metrics["vit_nep"],
                       "gap_nep_minus_vit_nep": metrics["vit_gap_nep"] - metrics["vit_nep"]}


def _pk_train(reports: Path) -> dict[str, Any]:
    return read_json(reports / "metrics" / "pk_train.json", "pk_train")


def _measure_pk1(reports: Path) -> dict[str, float]:
    metrics = _pk_train(reports)
    fractions = sorted({float(k.split("_")[1]) for k in metrics if k.startswith("vit_") and k[4].isdigit()})
    smallest = f"{fractions[0]:g}"
    measured = {}
    for model in ("vit", "cnn"):
        gaps = {f: metrics[f"{model}_{f}_test_error"] - metrics[f"{model}_{f}_train_error"] for f in (smallest, "1")}
        measured |= {f"{model}_gap_full": gaps["1"], f"{model}_gap_smallest": gaps[smallest],
                     f"{model}_gap_growth": gaps[smallest] - gaps["1"],
                     f"{model}_train_error_smallest": metrics[f"{model}_{smallest}_train_error"],
                     f"{model}_test_error_smallest": metrics[f"{model}_{smallest}_test_error"]}
    return measured | {"smallest_fraction": fractions[0],
                       "vit_minus_cnn_gap_growth": measured["vit_gap_growth"] - measured["cnn_gap_growth"]}


def _measure_pk6(reports: Path) -> dict[str, float]:
    metrics = _pk_train(reports)
    errors = {model: metrics[f"{model}_1_test_error"] for model in ("alternet", "cnn_baseline", "vit", "cnn")}
    return {f"{model}_test_error": error for model, error in errors.items()} | {
        "alternet_minus_cnn_baseline": errors["alternet"] - errors["cnn_baseline"]}


def _block_changes(quantity: str) -> Callable[[Path], dict[str, float]]:
    def measure(reports: Path) -> dict[str, float]:
        metrics = _pk(reports)
        return {"vit_msa_change": metrics[f"vit_{quantity}_change_msa"],
                "vit_mlp_change": metrics[f"vit_{quantity}_change_mlp"],
                "cnn_conv_change": metrics[f"cnn_{quantity}_change_conv"]}
    return measure


def _measure_pk5(reports: Path) -> dict[str, float]:
    metrics = _pk(reports)
    return {"vit_drop_highest": metrics["vit_noise_drop_highest"],
            "cnn_drop_highest": metrics["cnn_noise_drop_highest"],
            "vit_drop_lowest": metrics["vit_noise_drop_lowest"], "cnn_drop_lowest": metrics["cnn_noise_drop_lowest"],
            "vit_minus_cnn_drop_highest": metrics["vit_noise_drop_highest"] - metrics["cnn_noise_drop_highest"]}


CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="LI-1",
        paper="LI23",
        statement=("The number of training samples the ViT needs for zero test error grows like 1/alpha*^2 "
                   "as the fraction alpha* of label-relevant tokens shrinks; the CNN needs more samples."),
        metric=("N_min(alpha*): the smallest N from which on at least the threshold share of seeds reach "
                "zero test error; its log-log slope against 1/alpha* with a bootstrap 95% interval over seeds"),
        criteria=(Criterion("vit_n_min_falls_as_alpha_grows", ">=", 1.0),
                  Criterion("vit_exponent_ci_low", "<=", 2.5), Criterion("vit_exponent_ci_high", ">=", 1.5),
                  Criterion("cnn_needs_more_samples_at_smallest_alpha", ">=", 1.0)),
        evidence=("figures/phase_diagram.png", "figures/phase_scaling.png", "metrics/phase.json"),
        measure=_measure_li1,
    ),
    Claim(
        id="LI-2",
        paper="LI23",
        statement="The number of SGD iterations to zero training error grows as alpha* shrinks, about as 1/alpha*.",
        metric=("mean over seeds of the SGD steps until zero training error at the largest N; its log-log "
                "slope against 1/alpha* with a bootstrap 95% interval (the interval must overlap [0.5, 1.5])"),
        criteria=(Criterion("vit_steps_exponent_ci_low", "<=", 1.5),
                  Criterion("vit_steps_exponent_ci_high", ">=", 0.5)),
        evidence=("figures/phase_scaling.png", "metrics/phase.json"),
        measure=_measure_li2,
    ),
    Claim(
        id="LI-3",
        paper="LI23",
        statement=("SGD concentrates attention on label-relevant tokens: the attention mass that "
                   "label-relevant queries put on label-relevant tokens rises from about its uniform "
                   "value towards 1 during training."),
        metric=("mean over label-relevant query tokens of the test set of their attention mass on "
                "label-relevant tokens, at initialisation and after training"),
        criteria=(Criterion("final", ">=", 0.9), Criterion("final_over_initial", ">=", 3.0),
                  Criterion("initial_over_uniform", "<=", 1.5)),
        evidence=("figures/li_vit_attention.png", "figures/li_vit_training.png", "metrics/li_vit.json"),
        measure=_measure_li3,
    ),
    Claim(
        id="LI-4",
        paper="LI23",
        statement=("Removing label-irrelevant tokens, the noisiest tokens or confusion tokens each lowers the "
                   "test loss; removing label-relevant tokens raises it."),
        metric=("mean test hinge loss over keep ratios and seeds of a ViT trained and tested on the sparsified "
                "data, minus that of the same ViT on the full data"),
        criteria=(Criterion("irrelevant_minus_none", "<", 0.0), Criterion("noisiest_minus_none", "<", 0.0),
                  Criterion("confusion_minus_none", "<", 0.0), Criterion("relevant_minus_none", ">", 0.0)),
        evidence=("figures/sparsify.png", "sparsify/runs.csv", "metrics/sparsify.json"),
        measure=_measure_li4,
    ),
    Claim(
        id="LI-5",
        paper="LI23",
        statement=("Token sparsification guided by attention keeps the accuracy of a deeper ViT on real images, "
                   "also on images with an injected spurious patch."),
        metric=("test accuracy of the trained ViT keeping half its patch tokens, the most attended (mean "
                "attention from the class token over heads and layers), after a short fine-tune on them, against "
                "all tokens and against random halves; mean over seeds"),
        criteria=(Criterion("finetuned_attention_loss", "<=", 0.02),
                  Criterion("finetuned_attention_minus_random", ">", 0.0)),
        evidence=("figures/sparsify_real.png", "sparsify_real/runs.csv", "metrics/sparsify_real.json"),
        measure=_measure_li5,
    ),
    Claim(
        id="JSL-1",
        paper="JSL22",
        statement=("The positional-attention ViT trained by gradient descent reaches small test error on the "
                   "spatially structured data, while a generalized linear model cannot (error at least 1/8)."),
        metric="median over seeds of the test 0-1 error of the ViT and of the linear model phi(sum_j <w_j, X_j>)",
        criteria=(Criterion("vit_test_error", "<=", 0.05), Criterion("glm_test_error", ">=", 0.125)),
        evidence=("figures/spatial_training.png", "metrics/spatial.json"),
        measure=_measure_jsl1,
    ),
    Claim(
        id="JSL-2",
        paper="JSL22",
        statement=("Gradient descent makes the positional encodings learn patch association: the Top_C most "
                   "similar encodings of each patch are exactly its own set, from about chance at initialisation."),
        metric=("median over seeds of the share of patches whose Top_C of <p_i, p_j> equals their set, after "
                "training and at initialisation (minus chance); also the mean Top_C overlap"),
        criteria=(Criterion("final_exact", ">=", 0.9), Criterion("initial_exact_minus_chance", "<=", 0.1)),
        evidence=("figures/spatial_association.png", "figures/spatial_training.png", "metrics/spatial.json"),
        measure=_measure_jsl2,
    ),
    Claim(
        id="JSL-3",
        paper="JSL22",
        statement=("On i.i.d. Gaussian patches labelled by a cubic CNN over the sets (no spatial structure in "
                   "the inputs), the ViT still reaches small test error, but its positional encodings do not "
                   "show the convolution's sets."),
        metric=("median over seeds of the vanilla ViT's and the linear model's test error, and of the share "
                "of patches whose Top_C of <p_i, p_j> equals their teacher set (minus chance)"),
        criteria=(Criterion("vit_test_error", "<=", 0.10), Criterion("vit_minus_glm_test_error", "<", 0.0),
                  Criterion("exact_minus_chance", "<=", 0.1)),
        evidence=("metrics/control.json",),
        measure=_measure_jsl3,
    ),
    Claim(
        id="JSL-4",
        paper="JSL22",
        statement=("After pre-training, the model fine-tunes sample-efficiently to a new feature on the same "
                   "sets: keeping the learned positional attention, few downstream samples suffice."),
        metric=("downstream samples n from which on the median test error over seeds stays <= the target, "
                "fine-tuned (attention frozen, fresh readout) over from scratch"),
        criteria=(Criterion("finetune_reaches_target", ">=", 1.0), Criterion("finetune_over_scratch", "<=", 0.25)),
        evidence=("figures/transfer.png", "transfer/runs.csv", "metrics/transfer.json"),
        measure=_measure_jsl4,
    ),
    Claim(
        id="JSL-5",
        paper="JSL22",
        statement=("Under one fixed permutation of the image, a ViT keeps its accuracy and learns the permuted "
                   "structure, while a CNN loses accuracy."),
        metric="mean test accuracy over seeds on natural and on permuted images, ViT and CNN",
        criteria=(Criterion("vit_loss", "<=", 0.03), Criterion("cnn_loss_minus_vit_loss", ">", 0.0)),
        evidence=("figures/real_accuracy.png", "figures/real_positional_maps.png"),
        measure=_measure_jsl5,
    ),
    Claim(
        id="JSL-6",
        paper="JSL22",
        statement="A ViT whose attention depends only on positions is competitive with the vanilla ViT on real images.",
        metric="mean test accuracy over seeds of the positional-attention and the vanilla ViT, natural images",
        criteria=(Criterion("positional_minus_vanilla", ">=", -0.03),),
        evidence=("figures/real_accuracy.png",),
        measure=_measure_jsl6,
    ),
    Claim(
        id="PK-1",
        paper="PK22",
        statement=("ViTs' poor accuracy on small data is not overfitting: as the training set shrinks, their "
                   "training NLL and test error move together."),
        metric=("test error minus training error (mean over seeds) on the smallest class-balanced fraction of the "
                "training images and on all of them; its growth as data shrinks, ViT against CNN"),
        criteria=(Criterion("vit_minus_cnn_gap_growth", "<=", 0.0),),
        evidence=("figures/pk_small_data.png", "pk_train/runs.csv", "metrics/pk_train.json"),
        measure=_measure_pk1,
    ),
    Claim(
        id="PK-2",
        paper="PK22",
        statement=("ViTs have many negative Hessian eigenvalues, CNNs few; more data and global average pooling "
                   "suppress them."),
        metric=("share of negative eigenvalues (NEP) among the top eigenvalues by magnitude of the training "
                "cross-entropy's Hessian (Lanczos on Hessian-vector products), pooled over mini-batches and seeds: "
                "ViT, CNN, the ViT on the smallest data fraction, the ViT with global average pooling"),
        criteria=(Criterion("vit_nep_minus_cnn_nep", ">", 0.0), Criterion("small_data_nep_minus_vit_nep", ">", 0.0),
                  Criterion("gap_nep_minus_vit_nep", "<", 0.0)),
        evidence=("figures/pk_hessian.png", "pk/hessian.csv", "metrics/pk.json"),
        measure=_measure_pk2,
    ),
    Claim(
        id="PK-3",
        paper="PK22",
        statement="Attention blocks are low-pass filters and convolutions high-pass: across a block, the "
                  "high-frequency log amplitude of the feature maps falls for attention and rises for conv/MLP blocks.",
        metric=("mean over blocks of each kind and over seeds of the change, across the block, of the log "
                "amplitude at 1.0 pi minus that at frequency 0 (the official method)"),
        criteria=(Criterion("vit_msa_change", "<", 0.0), Criterion("vit_mlp_change", ">", 0.0),
                  Criterion("cnn_conv_change", ">", 0.0)),
        evidence=("figures/pk_features.png", "pk/profiles.csv", "metrics/pk.json"),
        measure=_block_changes("high_frequency"),
    ),
    Claim(
        id="PK-4",
        paper="PK22",
        statement="Attention blocks reduce the spatial variance of the feature maps; conv and MLP blocks raise it.",
        metric="mean over blocks of each kind and over seeds of the change of the spatial variance across the block",
        criteria=(Criterion("vit_msa_change", "<", 0.0), Criterion("vit_mlp_change", ">", 0.0),
                  Criterion("cnn_conv_change", ">", 0.0)),
        evidence=("figures/pk_features.png", "pk/profiles.csv", "metrics/pk.json"),
        measure=_block_changes("variance"),
    ),
    Claim(
        id="PK-5",
        paper="PK22",
        statement="ViTs are robust to high-frequency noise, CNNs fragile to it.",
        metric="test accuracy drop under noise band-passed at the highest frequency, mean over seeds",
        criteria=(Criterion("vit_minus_cnn_drop_highest", "<", 0.0),),
        evidence=("figures/pk_noise.png", "pk/noise.csv", "metrics/pk.json"),
        measure=_measure_pk5,
    ),
    Claim(
        id="PK-6",
        paper="PK22",
        statement="Replacing the last conv block of each stage by an attention block (AlterNet) beats the pure CNN.",
        metric="mean test error over seeds of AlterNet and of the CNN of the same depth, all conv blocks",
        criteria=(Criterion("alternet_minus_cnn_baseline", "<", 0.0),),
        evidence=("figures/pk_small_data.png", "pk_train/runs.csv", "metrics/pk_train.json"),
        measure=_measure_pk6,
    ),
)


def evaluate(claim: Claim, reports: Path) -> dict[str, Any]:
    """The claim's record for claims.json, its verdict computed from the measured numbers."""
    measured = claim.measure(reports)
    return {
        "id": claim.id,
        "paper": claim.paper,
        "statement": claim.statement,
        "metric": claim.metric,
        "measured": measured,
        "threshold": {c.quantity: f"{c.op} {c.threshold:g}" for c in claim.criteria},
        "holds": all(c.holds(measured) for c in claim.criteria),
        "evidence": list(claim.evidence),
    }


def evaluate_all(reports: Path) -> list[dict[str, Any]]:
    return [evaluate(claim, reports) for claim in CLAIMS]
