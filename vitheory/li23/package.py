"""[LI23] in the paper table (vitheory.papers): its params sections and the rules across them, its
claims, its figures and verify's re-derivations."""

from collections.abc import Iterator
from typing import Any

from vitheory.core.config import Violation
from vitheory.core.package import Package
from vitheory.li23 import figures, initial_error, params, rederive
from vitheory.li23.claims import PAPER


def relations(whole: Any) -> Iterator[Violation]:
    """The rules across [LI23]'s sections: params.py's, and LI-7's sweep against the phase data."""
    yield from params.relations(whole)
    yield from initial_error.relations(whole)


PACKAGE = Package(name="li23", params=params.SECTIONS | {"init_error": initial_error.InitErrorParams},
                  relations=relations, paper=PAPER, render=figures.render, checks=rederive.CHECKS)
