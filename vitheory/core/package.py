"""What a package of the science contributes to the pipeline, said in one place.

The paper table (`vitheory.papers`) lists one `Package` per package; the params check, the renderer,
the report and verify read that table, and nothing in core names a package. A stage does not: it
imports its own package's modules and declares the params sections it reads (vitheory.core.cli), so
that editing one paper's code or params reruns that paper's stages alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vitheory.core.claims import Paper
from vitheory.core.config import Violation
from vitheory.core.rederive import Problem


def no_relations(params: Any) -> Iterator[Violation]:
    return iter(())


@dataclass(frozen=True)
class Package:
    """`params`: the params.yaml keys the package owns, each to its section class or type. `relations`:
    the rules across its sections, over the whole file's params (yielding full dotted keys). `paper`:
    its claims, if it is a paper. `render`: draws its figures from the render stage's params.
    `checks`: verify's recomputations of its stages' stored values from other raw artifacts."""

    name: str
    params: Mapping[str, Any]
    relations: Callable[[Any], Iterator[Violation]] = no_relations
    paper: Paper | None = None
    render: Callable[[Any], None] | None = None
    checks: tuple[Callable[[Path], list[Problem]], ...] = field(default=())
