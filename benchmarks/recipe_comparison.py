"""A cheaper image recipe against the committed one, claim by claim: the owner's rule for adopting it.

A candidate recipe (batch size with its learning rate, epochs, evaluation cadence, pk_train's fractions, the
Hessian's batches or Lanczos steps...) runs on the committed seeds; it is adopted only if every claim keeps
its verdict and every deciding number of the candidate lies inside the committed run's interval for it.
This prints, per criterion and condition: the committed value, interval and verdict, the candidate's value
and verdict, whether the candidate's value lies inside the committed interval, and, for a quantity taken
seed by seed (a share, median or paired direction), the seed-by-seed differences (the same seeds, paired);
then the decision. Intervals and verdicts are the report's own (`intervals`, `decide`), without seed plans.

Both runs are read from checkouts of their commits: the tables claims read are git-tracked, so a candidate
queued as an experiment is read from a worktree of its commit:

    dvc exp run -S real.batch_size=128 -S real.lr=0.006        # the candidate, on the committed seeds
    git worktree add /tmp/candidate <the experiment's commit>   # `dvc exp show` names it
    python -m benchmarks.recipe_comparison /tmp/candidate       # against this checkout's committed run
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks import load_average
from vitheory.core.claims import Claim, Criterion, claim_verdict, decide, intervals
from vitheory.core.intervals import GROUPED, Interval, IntervalSettings, Measurement
from vitheory.core.paths import ROOT
from vitheory.papers import PAPERS
from vitheory.params import load_params
from vitheory.report import fmt, interval_text


@dataclass(frozen=True)
class Judged:
    """One criterion of one run: its value, interval, verdict and, where taken per seed, each seed's value."""

    value: float | None
    interval: Interval
    verdict: str
    per_seed: list[float | None] | None


@dataclass(frozen=True)
class Compared:
    claim: str
    label: str  # the criterion's label; a condition's after "condition: "
    committed: Judged
    candidate: Judged

    @property
    def inside(self) -> bool:
        """The candidate's value within the committed run's interval (ends included; an unmeasured one is not)."""
        low, high = self.committed.interval.ends
        value = self.candidate.value
        return None not in (value, low, high) and low <= value <= high

    def seed_differences(self) -> str:
        """The candidate's per-seed values minus the committed run's, over the seeds both measured."""
        pairs = [(b, a) for a, b in zip(self.committed.per_seed or [], self.candidate.per_seed or [])
                 if a is not None and b is not None and math.isfinite(a) and math.isfinite(b)]
        if not pairs:
            return "-"
        d = np.array([b - a for b, a in pairs])
        return f"{len(pairs)} seeds: mean {d.mean():+.3g}, largest {d[np.abs(d).argmax()]:+.3g}"


def judge(claim: Claim, root: Path, cfg: IntervalSettings) -> dict[str, Judged]:
    """Every criterion and condition of the claim on the run under `root`, as the report decides them."""
    samples = claim.samples(root)
    measured = claim.statistics(samples)
    found = intervals(claim, samples, cfg)
    measurement = Measurement(claim.statistics, samples, measured, cfg, claim.id)

    def one(c: Criterion) -> Judged:
        per_seed = measurement.per_unit(c.quantity, c.group) if c.kind in GROUPED else None
        return Judged(measured[c.quantity], found[c.quantity], decide(c, measured[c.quantity], found[c.quantity], cfg),
                      per_seed)

    return ({str(c): one(c) for c in claim.criteria}
            | {f"condition: {c}": one(c) for c in claim.conditions})


def compare(claims: list[Claim], committed: Path, candidate: Path, cfg: IntervalSettings
            ) -> tuple[list[Compared], dict[str, tuple[str, str]]]:
    """Each criterion of each claim under both runs, and each claim's verdict under both."""
    rows, verdicts = [], {}
    for claim in claims:
        before, after = judge(claim, committed, cfg), judge(claim, candidate, cfg)
        rows += [Compared(claim.id, label, before[label], after[label]) for label in before]
        verdicts[claim.id] = tuple(claim_verdict([j.verdict for label, j in judged.items()
                                                  if not label.startswith("condition: ")],
                                                 [j.verdict for label, j in judged.items()
                                                  if label.startswith("condition: ")])
                                   for judged in (before, after))
    return rows, verdicts


def reasons_to_keep(rows: list[Compared], verdicts: dict[str, tuple[str, str]]) -> list[str]:
    """Why the candidate may not be adopted: a claim whose verdict moved, a number outside its interval."""
    moved = [f"{claim}: {before} -> {after}" for claim, (before, after) in verdicts.items() if before != after]
    outside = [f"{row.claim} `{row.label}`: {fmt(row.candidate.value)} outside {interval_text(row.committed.interval.ends)}"
               for row in rows if not row.inside]
    return moved + outside


def table(rows: list[Compared], verdicts: dict[str, tuple[str, str]]) -> str:
    lines = ["| claim | criterion | committed value [interval] | verdict | candidate value | verdict | inside | "
             "candidate minus committed, seed by seed |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {row.claim} | `{row.label}` | {fmt(row.committed.value)} {interval_text(row.committed.interval.ends)} "
              f"| {row.committed.verdict} | {fmt(row.candidate.value)} | {row.candidate.verdict} | "
              f"{'yes' if row.inside else '**no**'} | {row.seed_differences()} |" for row in rows]
    lines += ["", "| claim | committed | candidate |", "| --- | --- | --- |"]
    lines += [f"| {claim} | {before} | {after} |" for claim, (before, after) in verdicts.items()]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("candidate", type=Path, help="a checkout of the candidate run's commit")
    parser.add_argument("--committed", type=Path, default=ROOT, help="a checkout of the committed run (default: here)")
    parser.add_argument("--claims", nargs="*", help="claim ids (default: every real-image claim, which the "
                        "image recipe reaches)")
    args = parser.parse_args()
    every = [claim for paper in PAPERS for claim in paper.claims]
    chosen = [c for c in every if c.id in args.claims] if args.claims else [c for c in every if c.data == "real"]
    unknown = sorted(set(args.claims or ()) - {c.id for c in every})
    if unknown:
        parser.error(f"no claim {', '.join(unknown)}: choose from {', '.join(c.id for c in every)}")
    cfg = load_params(args.committed / "params.yaml").report
    print(f"{load_average()}; committed {args.committed}, candidate {args.candidate}")
    rows, verdicts = compare(chosen, args.committed, args.candidate, cfg)
    print(table(rows, verdicts))
    reasons = reasons_to_keep(rows, verdicts)
    print("\nadopt the candidate: every verdict kept, every number inside the committed interval" if not reasons
          else "\nkeep the committed recipe:\n" + "\n".join(f"- {reason}" for reason in reasons))


if __name__ == "__main__":
    main()
