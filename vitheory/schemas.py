"""Columns of the long-form tables the stages write and the figures and claim checks read."""

HISTORY = ("model", "seed", "step", "split", "metric", "value")
PHASE_RUNS = ("model", "alpha_star", "n_train", "seed", "test_error", "steps_to_zero_train_error", "success")
SPARSIFY_RUNS = ("strategy", "keep_ratio", "kept_tokens", "seed", "test_loss", "test_error")
