"""A paper's claims as checks: what each claim says, which numbers measure it, the thresholds, and how
sure the verdict is.

Each paper package defines its claims (`vitheory.<paper>.claims.PAPER`); this module holds what they
share. A verdict is never written by hand: `evaluate` reads the numbers from the pipeline's
artifacts and compares them with the thresholds. Thresholds belong to the claim's definition, not
to params.yaml: they do not move to fit a run; each names its source, the paper's or ours.

Every claim measures its quantities from groups of independent units (seeds: a model's mini-batches,
blocks or test images are measured inside their seed, never resampled as units):
`samples(root)` reads them, `statistics(samples)` computes the quantities. Each criterion declares what
kind of quantity it decides on, and its interval is the one the table of methods
(vitheory.core.intervals, `METHODS`) makes for that kind.
A criterion holds when its whole interval lies on the threshold's side, does not hold when the whole
interval lies on the other (or, where the criterion declares a smallest effect of interest, wholly within
it of the threshold), and is inconclusive otherwise. A paired direction is decided by its sign-flip
p-values instead, not by the interval shown beside them: it holds when the test rejects the other side at
the interval's tail level, does not hold when it rejects the holding side (`decide`). An inconclusive
criterion says how many seeds its own decision would need to decide with power POWER
(vitheory.core.planning: runs drawn from its units as they are, each decided by the same method and
`decide`), never from a normal spread they may not have: stalled or skewed seeds count as what they are.
A claim holds when every criterion holds and does not hold when any does not; else it is inconclusive.

A claim's `conditions` are criteria on the measurement, not on the claim: that a grid brackets the
transition it locates, that the models it compares trained. When one is not met the regime cannot show
the effect, and the claim is inconclusive whatever its criteria say. A claim's `variants` measure it
again under other settings (a wider grid, another score form, another dataset): the report states
their verdicts beside the main one and names every claim whose verdict changes with the setting. A
claim's `data` says whether it runs on a paper's synthetic data model or on real images.

claims.json keys each check by its label (`str(criterion)`, for people) and stores its quantity apart
(`quantity`): what reads a check takes the quantity from there, never from the label.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from vitheory.core.criteria import FAILS, HOLDS, INCONCLUSIVE, THRESHOLD_SOURCES, Criterion, decide
from vitheory.core.intervals import METHODS, STEP, Interval, IntervalSettings, Measured, Measurement, Samples, method_name
from vitheory.core.paths import artifact
from vitheory.core.planning import AFFORDABLE_SEEDS, POWER, seeds_needed

__all__ = ["AFFORDABLE_SEEDS", "FAILS", "HOLDS", "INCONCLUSIVE", "POWER", "THRESHOLD_SOURCES", "Claim", "Criterion",
           "PREMISE_LABEL", "Paper", "Variant", "claim_verdict", "decide", "evaluate", "intervals", "labelled_checks"]

CONDITION_LABEL = "condition: "  # what precedes a condition's label where it is listed with the criteria
PREMISE_LABEL = "premise: "  # ... and a premise's, a condition the paper's theorem assumes (Criterion.premise)
SYNTHETIC, REAL = "synthetic", "real"  # a claim's data: a paper's synthetic data model, or real images


@dataclass(frozen=True)
class Variant:
    """The claim measured again from other units: `samples(root)` as the claim's, another setting."""

    name: str
    samples: Callable[[Path], Samples]


@dataclass(frozen=True)
class Claim:
    """One claim. `samples(root)` reads its units from the artifacts under the repository root `root`;
    `statistics(samples)` measures every quantity from them; `regime(params)` says where the run's
    settings put it; `data` whether it is measured on a paper's synthetic data model (SYNTHETIC) or on real
    images (REAL), which the report's verdict table reads, never the regime's text; `evidence` are
    artifact paths relative to the root; `seeds` are the params keys that set how many independent units
    (seeds) it has, which the `decisive` preset raises to what its inconclusive criteria need (none: its
    units are not seeds, as a model written down by hand)."""

    id: str
    statement: str
    metric: str
    criteria: tuple[Criterion, ...]
    evidence: tuple[Path, ...]
    samples: Callable[[Path], Samples]
    statistics: Callable[[Samples], Measured]
    regime: Callable[[Any], str]
    data: Literal["synthetic", "real"]
    conditions: tuple[Criterion, ...] = ()
    variants: tuple[Variant, ...] = ()
    seeds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.data not in (SYNTHETIC, REAL):
            raise ValueError(f"{self.id}: data {self.data!r} is neither {SYNTHETIC!r} nor {REAL!r}")
        declared: dict[str, tuple] = {}
        for c in (*self.criteria, *self.conditions):
            if declared.setdefault(c.quantity, (c.kind, c.group, c.bounds)) != (c.kind, c.group, c.bounds):
                raise ValueError(f"{self.id}: {c.quantity} is declared as two kinds of quantity")

    def measure(self, root: Path) -> Measured:
        return self.statistics(self.samples(root))


@dataclass(frozen=True)
class Paper:
    key: str  # as cited: [LI23]
    citation: str
    claims: tuple[Claim, ...]


def _declared(claim: Claim) -> dict[str, Criterion]:
    return {c.quantity: c for c in (*claim.criteria, *claim.conditions)}


def _measurement(claim: Claim, samples: Samples, cfg: IntervalSettings, setting: str) -> Measurement:
    """The claim's units and statistics, keyed by the claim and its setting (what seeds its random draws)."""
    return Measurement(claim.statistics, samples, claim.statistics(samples), cfg, f"{claim.id}{setting}")


def _intervals(claim: Claim, measurement: Measurement) -> dict[str, Interval]:
    return {quantity: METHODS[c.kind].interval(c, measurement) for quantity, c in sorted(_declared(claim).items())}


def intervals(claim: Claim, samples: Samples, cfg: IntervalSettings, setting: str = "") -> dict[str, Interval]:
    """The interval of each criterion's and condition's quantity, by the method its kind names in `METHODS`."""
    return _intervals(claim, _measurement(claim, samples, cfg, setting))


def labelled_checks(judged: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, check) of every criterion, then every condition (its label after CONDITION_LABEL, a premise's
    after PREMISE_LABEL), of one judged setting of a claims.json record: how the report, the README and the
    decisive preset name them."""
    return [*judged["criteria"].items(),
            *((f"{PREMISE_LABEL if check.get('premise') else CONDITION_LABEL}{name}", check)
              for name, check in judged["conditions"].items())]


def claim_verdict(verdicts: Sequence[str], conditions: Sequence[str] = ()) -> str:
    """INCONCLUSIVE whatever the criteria say when a condition of the measurement is not met; else FAILS if
    any criterion fails, HOLDS if all hold, else INCONCLUSIVE."""
    if any(v != HOLDS for v in conditions):
        return INCONCLUSIVE
    if FAILS in verdicts:
        return FAILS
    return HOLDS if all(v == HOLDS for v in verdicts) else INCONCLUSIVE


def _checks(criteria: Sequence[Criterion], measurement: Measurement, found: dict[str, Interval]
            ) -> dict[str, dict[str, Any]]:
    checks, cfg = {}, measurement.cfg
    for c in criteria:
        interval, value = found[c.quantity], measurement.measured[c.quantity]
        verdict = decide(c, value, interval, cfg)
        check = {"quantity": c.quantity, "threshold": f"{c.op} {c.threshold:g}", "source": c.source, "origin": c.origin,
                 "kind": c.kind, "method": method_name(c.kind, interval), "interval": [interval.low, interval.high],
                 "coverage": interval.coverage, "units": interval.units, "df": interval.df,
                 "margin": c.margin(value), "verdict": verdict,
                 "assumption": METHODS[c.kind].check(c, measurement)}
        if interval.p_values is not None:
            check["p_values"] = {"greater": interval.p_values[0], "smaller": interval.p_values[1]}
        if c.kind == STEP:
            check["unmeasured_resamples"] = interval.unmeasured
        if c.premise:
            check["premise"] = True
        if c.smallest_effect is not None:
            check["smallest_effect"] = {"value": c.smallest_effect, "source": c.smallest_effect_source}
            if verdict == FAILS and c.negligible(interval.ends):
                check["reason"] = f"the effect, if any, is smaller than {c.smallest_effect:g}"
        if verdict == INCONCLUSIVE:
            plan = seeds_needed(c, measurement, interval)
            check["seeds_needed"], check["plan"] = plan.seeds, plan.record()
        checks[str(c)] = check
    return checks


def _judge(claim: Claim, samples: Samples, cfg: IntervalSettings, setting: str = "") -> dict[str, Any]:
    measurement = _measurement(claim, samples, cfg, setting)
    measured, found = measurement.measured, _intervals(claim, measurement)
    criteria = _checks(claim.criteria, measurement, found)
    conditions = _checks(claim.conditions, measurement, found)
    verdict = claim_verdict([c["verdict"] for c in criteria.values()], [c["verdict"] for c in conditions.values()])
    return {"measured": measured, "criteria": criteria, "conditions": conditions, "verdict": verdict,
            "units": {group: len(units) for group, units in samples.items()}}


def evaluate(claim: Claim, paper: str, root: Path, cfg: IntervalSettings) -> dict[str, Any]:
    """The claim's record for claims.json: every measured quantity; each criterion's and condition's
    quantity, threshold and its source, kind and interval method, interval and its coverage, the units it
    rests on, Student-t's degrees of freedom, a paired test's p-values, margin, verdict and, when
    inconclusive, the seeds its test would need; the claim's verdict; the same under each variant setting;
    evidence relative to the report's folder, where it is linked from."""
    judged = _judge(claim, claim.samples(root), cfg)
    report_folder = artifact("report").parent
    return {
        "id": claim.id,
        "paper": paper,
        "statement": claim.statement,
        "metric": claim.metric,
        **judged,
        "interval": {"confidence": cfg.confidence, "resamples": cfg.bootstrap},
        "variants": {variant.name: _judge(claim, variant.samples(root), cfg, variant.name)
                     for variant in claim.variants},
        "evidence": [Path(os.path.relpath(path, report_folder)).as_posix() for path in claim.evidence],
    }
