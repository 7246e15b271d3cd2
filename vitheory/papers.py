"""The papers whose claims the pipeline checks, in the report's order: the one list the report and
verify read. Each paper package contributes its claims (`<paper>.claims.PAPER`) and the checks that
re-derive its stages' summaries from their raw artifacts (`<paper>.rederive.CHECKS`); the real-image
package, shared by the papers, contributes train_real's. Only verify imports the checks, so the
report stage does not depend on them."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from vitheory.jsl22 import claims as jsl22_claims
from vitheory.li23 import claims as li23_claims
from vitheory.pk22 import claims as pk22_claims

PAPERS = (li23_claims.PAPER, jsl22_claims.PAPER, pk22_claims.PAPER)
REDERIVE_MODULES = ("vitheory.li23.rederive", "vitheory.jsl22.rederive", "vitheory.images.rederive",
                    "vitheory.pk22.rederive")


def summary_checks() -> list[Callable[[Path], list[str]]]:
    """Every package's re-derivation checks."""
    return [check for module in REDERIVE_MODULES for check in importlib.import_module(module).CHECKS]
