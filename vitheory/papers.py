"""The paper table: every package the pipeline runs, in the report's order, with what each contributes
(vitheory.core.package.Package). The params check, the renderer, the report and verify read it; adding
a paper is its package, its params section, its stage entries and one line here.

`PIPELINE` holds the params every paper's stages share: the device, the figures' settings, the
intervals' settings and the atlas's grid (vitheory.grid), which no stage reads."""

from __future__ import annotations

from vitheory.core.device import DEVICE
from vitheory.core.ensemble import Stability
from vitheory.core.figures import RenderParams
from vitheory.core.intervals import IntervalSettings
from vitheory.core.package import Package
from vitheory.grid import SECTION as ATLAS
from vitheory.grid import AtlasParams
from vitheory.images.package import PACKAGE as IMAGES
from vitheory.jsl22.package import PACKAGE as JSL22
from vitheory.li23.package import PACKAGE as LI23
from vitheory.pk22.package import PACKAGE as PK22

PIPELINE = Package(name="pipeline", params={"train.device": DEVICE, "train.stability": Stability,
                                            "render": RenderParams, "report": IntervalSettings, ATLAS: AtlasParams})
PACKAGES = (PIPELINE, LI23, JSL22, IMAGES, PK22)
PAPERS = tuple(package.paper for package in PACKAGES if package.paper is not None)
