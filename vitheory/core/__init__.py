"""What every paper's experiments share: params loading, artifact paths and files, checkpoints with the
model registry, device and seeding, the stacked trainer, resumable state, logged series, claims,
figures and the one-line errors."""
