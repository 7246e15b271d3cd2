"""Formats shared by the stages that write and the figures and claim checks that read: the columns of
the long-form tables, and how alpha*-keyed metrics are read back."""

HISTORY = ("model", "seed", "step", "split", "metric", "value")
PHASE_RUNS = ("model", "alpha_star", "n_train", "seed", "test_error", "steps_to_zero_train_error", "success")
SPARSIFY_RUNS = ("strategy", "keep_ratio", "kept_tokens", "seed", "test_loss", "test_error")
SPARSIFY_REAL_RUNS = ("experiment", "strategy", "kept_tokens", "seed", "finetuned", "test_accuracy")
PK_PROFILES = ("model", "seed", "index", "kind", "depth", "high_frequency", "variance")
PK_NOISE = ("model", "seed", "frequency", "accuracy_drop")
PK_HESSIAN = ("model", "seed", "batch", "rank", "eigenvalue")
PK_TRAIN_RUNS = ("model", "fraction", "seed", "train_loss", "train_error", "test_loss", "test_error")
TRANSFER_RUNS = ("method", "n_train", "seed", "test_error", "diverged")


def by_alpha(values: dict[str, float | None]) -> list[tuple[float, float | None]]:
    """An alpha*-keyed map of the phase metrics (keys like "0.15") as (alpha*, value) pairs, ascending."""
    return sorted((float(alpha), value) for alpha, value in values.items())
