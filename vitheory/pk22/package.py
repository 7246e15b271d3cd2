"""[PK22] in the paper table (vitheory.papers): its params sections, its claims, its figures and
verify's re-derivations."""

from functools import partial

from vitheory.core.package import Package
from vitheory.pk22 import figures, params, rederive
from vitheory.pk22.claims import NOISE_DECIDES, PAPER, SHARE_COMPARISONS

# the figures mark what the claims decide on: PK-5's normalisation of the noise, PK-2's comparisons
PACKAGE = Package(name="pk22", params=params.SECTIONS, relations=params.relations, paper=PAPER,
                  render=partial(figures.render, noise_decides=NOISE_DECIDES,
                                 share_comparisons=tuple(SHARE_COMPARISONS.values())),
                  checks=rederive.CHECKS)
