"""[LI23] in the paper table (vitheory.papers): its params sections and the rules across them, its
claims, its figures and verify's re-derivations."""

from vitheory.core.package import Package
from vitheory.li23 import figures, params, rederive
from vitheory.li23.claims import PAPER

PACKAGE = Package(name="li23", params=params.SECTIONS, relations=params.relations, paper=PAPER,
                  render=figures.render, checks=rederive.CHECKS)
