"""The real images and their models, which several papers' claims share, in the paper table
(vitheory.papers): their params sections and verify's re-derivations of train_real's summaries."""

from vitheory.core.package import Package
from vitheory.images import params, rederive

PACKAGE = Package(name="images", params=params.SECTIONS, checks=rederive.CHECKS)
