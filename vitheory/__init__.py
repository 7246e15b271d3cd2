"""vitheory: executable theory of vision transformers.

The science of the pipeline: data models, models, training, analyses, figures and claim checks.
Stage scripts in `stages/` are thin wrappers around this package. Importing the package is light
(no torch) so that params are checked at once; `load_checkpoint` and `save_checkpoint` import
torch when first used.
"""

__all__ = ["load_checkpoint", "save_checkpoint"]


def __getattr__(name: str):
    if name in __all__:
        from vitheory import checkpoint

        return getattr(checkpoint, name)
    raise AttributeError(f"module 'vitheory' has no attribute {name!r}")
