"""The failures a user can fix. Each message is a single line that names what is wrong and what to do;
stage scripts print it instead of a traceback and exit with code 2 (vitheory.cli)."""


class VitheoryError(Exception):
    """Base of the expected, user-fixable failures."""


class ParamsError(VitheoryError, ValueError):
    """A value in params.yaml is not allowed."""


class ArtifactError(VitheoryError):
    """An artifact is missing, unreadable or does not match what reads it."""


class TrainingDiverged(VitheoryError):
    """The loss became non-finite."""


class StageBusy(VitheoryError):
    """Another process is running the same stage."""
