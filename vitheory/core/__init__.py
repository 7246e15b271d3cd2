"""What every package of the science shares, naming none of them: params sections and views, artifact
paths and files, checkpoints named by their class's import path, device and seeding, the stacked
trainer, resumable state, logged series, claims, what a package contributes to the pipeline, figures
and the one-line errors."""
