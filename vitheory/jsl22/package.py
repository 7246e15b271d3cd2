"""[JSL22] in the paper table (vitheory.papers): its params sections and the rules across them, its
claims, its figures and verify's re-derivations."""

from vitheory.core.package import Package
from vitheory.jsl22 import figures, params, rederive
from vitheory.jsl22.claims import PAPER

PACKAGE = Package(name="jsl22", params=params.SECTIONS, relations=params.relations, paper=PAPER,
                  render=figures.render, checks=rederive.CHECKS)
