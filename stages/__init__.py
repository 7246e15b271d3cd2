"""One script per DVC stage. Importing vitheory first pins the CPU numerics before a stage imports torch."""

import vitheory  # noqa: F401
