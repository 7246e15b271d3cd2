"""The failures a user can fix. Each message is a single line that names what is wrong and what to do;
stage scripts print it instead of a traceback and exit with code 2 (vitheory.cli)."""

from pathlib import Path


class VitheoryError(Exception):
    """Base of the expected, user-fixable failures."""


class ParamsError(VitheoryError, ValueError):
    """A value in params.yaml is not allowed."""


class ArtifactError(VitheoryError):
    """An artifact is missing, unreadable or does not match what reads it; `path` is that artifact, where
    the raiser names one (verify tells an artifact not built yet from a broken one by it)."""

    def __init__(self, message: str, path: str | Path | None = None) -> None:
        super().__init__(message)
        self.path = None if path is None else Path(path)


class TrainingDiverged(VitheoryError):
    """The loss became non-finite."""


class StageBusy(VitheoryError):
    """Another process is running the same stage."""
