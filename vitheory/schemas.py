"""Formats shared by the stages that write and the figures, claim checks and `verify` that read: the
columns of the long-form tables with the type of each, and how alpha*-keyed metrics are read back."""

HISTORY = {"model": str, "seed": int, "step": int, "split": str, "metric": str, "value": float}
PHASE_RUNS = {"model": str, "alpha_star": float, "n_train": int, "seed": int, "test_error": float,
              "steps_to_zero_train_error": int, "success": int}
SPARSIFY_RUNS = {"strategy": str, "keep_ratio": float, "kept_tokens": int, "seed": int, "test_loss": float,
                 "test_error": float}
SPARSIFY_REAL_RUNS = {"experiment": str, "strategy": str, "kept_tokens": int, "seed": int, "finetuned": int,
                      "test_accuracy": float}
PK_PROFILES = {"model": str, "seed": int, "index": int, "kind": str, "depth": float, "high_frequency": float,
               "variance": float}
PK_NOISE = {"model": str, "seed": int, "frequency": float, "accuracy_drop": float}
PK_HESSIAN = {"model": str, "seed": int, "batch": int, "rank": int, "eigenvalue": float}
PK_TRAIN_RUNS = {"model": str, "fraction": float, "seed": int, "train_loss": float, "train_error": float,
                 "test_loss": float, "test_error": float}
TRANSFER_RUNS = {"method": str, "n_train": int, "seed": int, "test_error": float, "diverged": int}

def by_alpha(values: dict[str, float | None]) -> list[tuple[float, float | None]]:
    """An alpha*-keyed map of the phase metrics (keys like "0.15") as (alpha*, value) pairs, ascending."""
    return sorted((float(alpha), value) for alpha, value in values.items())
