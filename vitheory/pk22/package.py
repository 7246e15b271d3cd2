"""[PK22] in the paper table (vitheory.papers): its params sections, its claims, its figures and
verify's re-derivations."""

from vitheory.core.package import Package
from vitheory.pk22 import figures, params, rederive
from vitheory.pk22.claims import PAPER

PACKAGE = Package(name="pk22", params=params.SECTIONS, relations=params.relations, paper=PAPER, render=figures.render, checks=rederive.CHECKS)
