"""[JSL22] in the paper table (vitheory.papers): its params sections and the rules across them, its
claims, its figures and verify's re-derivations."""

from functools import partial

from vitheory.core.package import Package
from vitheory.jsl22 import figures, params, rederive
from vitheory.jsl22.claims import PAPER

# JSL-6's floor, drawn in real_accuracy.png: at most this far below the vanilla ViT
POSITIONAL_MARGIN = -next(c for c in PAPER.claims if c.id == "JSL-6").criteria[0].threshold

PACKAGE = Package(name="jsl22", params=params.SECTIONS, relations=params.relations, paper=PAPER,
                  render=partial(figures.render, positional_margin=POSITIONAL_MARGIN), checks=rederive.CHECKS)
