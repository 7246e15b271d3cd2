"""Check the results in the repository without rerunning the pipeline, or a rerun against them.

    python -m vitheory.verify                    # the workspace is consistent
    python -m vitheory.verify --against main     # ... and agrees with the claims committed at `main`

1. The workspace matches dvc.lock: every stage's deps (code, params, data) and outputs hash as
   recorded (`dvc status`). An output DVC caches (data/, models/) that is simply absent, as in a fresh
   clone, is "not built", not a mismatch: the checks that need it are skipped and named in one line,
   with the commands that bring it (`dvc pull`, `dvc repro` and its time in docs/REVIEWING.md).
2. The per-seed values that stages store follow from the other raw artifacts of the run: LI-3's and
   JSL-1/2's initial and final values from the logged series; the phase fits from the per-run CSVs;
   each seed's JSL-2 association from the positional encodings in its checkpoint; every train_real
   accuracy and structure score by evaluating its checkpoint on the test images again. Stages store
   no summary statistic (no mean, interval or count over runs): the claims compute every one, once.
   (JSL-3's control stage keeps no checkpoint: its claim is read from its per-seed runs alone.) Each
   package holds its own checks (`vitheory.<paper>.rederive`); the paper table lists them.
3. Every claim is evaluated again from those raw artifacts by its own code (`vitheory.<paper>.claims`)
   and compared with the verdict and numbers stored in reports/claims.json.

Prints one table (claim, verdict, agrees with stored, measured [interval] (threshold)) and every
problem by name, one line each. Exit codes (EXIT_CODES, also in `--help`): 0 everything matches,
whatever the verdicts (a claim that does not hold is a result, not an inconsistency); 2 inconsistent (a
mismatch, or an unreadable or partly missing artifact); 3 not built (everything git holds is
consistent, DVC's outputs are absent); with `--strict`, 1 when everything matches but some claim does
not hold or is inconclusive.

With `--against REV` (a rerun on another machine, say, against the committed results), it also
compares every claim with `reports/claims.json` as committed at the git revision REV: each criterion's
number must agree within its tolerance, the larger half-width of the two runs' intervals (the spread over
seeds that each run measured; a number with no spread must agree to 1e-9 relative). A verdict that differs
while every number agrees so is a move (its interval crosses the threshold on one run and not on the
other: REPORT lists the criteria a change of machine can flip), said on a `moved:` line; a verdict that
differs with a number beyond its tolerance is a problem. Exit code 0: consistent and in agreement, moves
included; 2: otherwise, each disagreement a `problem:` line.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vitheory import atlas
from vitheory.core.artifacts import read_json
from vitheory.core.claims import HOLDS, evaluate
from vitheory.core.errors import ArtifactError, VitheoryError
from vitheory.core.paths import artifact
from vitheory.core.rederive import Problem, same
from vitheory.papers import PACKAGES, PAPERS
from vitheory.params import DEFAULT_PATH, load_params
from vitheory.report import fmt
from vitheory.reviewing import read_stage_times, stage_seconds


CONSISTENT, STRICT_FAILED, INCONSISTENT, NOT_BUILT = 0, 1, 2, 3
EXIT_CODES = f"""exit codes:
  {CONSISTENT}  consistent: every check agrees, whatever the verdicts
  {STRICT_FAILED}  (--strict only) consistent, but some claim does not hold or is inconclusive
  {INCONSISTENT}  inconsistent: a committed file or number differs from dvc.lock or from what re-derives it
  {NOT_BUILT}  not built: what git holds is consistent, but DVC's outputs (data/, models/) are absent"""
MISSING = ("not in cache", "deleted")  # DVC's word for an output never built here, or not checked out
WIDTH = 120  # the table's lines, wrapped


LOCK = Path("dvc.lock")


@dataclass
class LockState:
    """What `dvc status` found: one problem per inconsistent stage, and the stages that are only not
    built (their DVC-cached outputs absent, every other hash as dvc.lock records)."""
    problems: list[Problem] = field(default_factory=list)
    unbuilt: list[str] = field(default_factory=list)  # stages with an absent DVC-cached output: to rebuild
    absent: set[Path] = field(default_factory=set)  # those outputs
    in_cache: bool = True  # every absent output is in DVC's cache (`dvc checkout` restores it)


def lock_state(root: Path) -> LockState:
    """`dvc status` of every stage, sorted into what is absent and what differs."""
    from dvc.lock import LockError  # imported here: DVC is slow to import and only this check needs it
    from dvc.repo import Repo

    repo = Repo(str(root))
    cached = {Path(out.def_path) for stage in repo.index.stages for out in stage.outs if out.use_cache}
    state = LockState()
    try:
        status = repo.status()
    except LockError:
        raise ArtifactError("DVC is running a stage in this workspace (its lock is held): verify once it is "
                            "done, or in a clone") from None
    for stage, changes in status.items():
        differing, absent = [], []
        for change in changes:
            for kind, path, word in _entries(change):
                inside = path is not None and any(path == out or out in path.parents for out in cached)
                if inside and word in MISSING and not (root / path).exists():
                    absent.append((kind, path, word))
                else:
                    differing.append((kind, path, word))
        if differing:
            state.problems.append(_lock_problem(stage, differing, cached))
        outs = [(path, word) for kind, path, word in absent if kind == "changed outs"]
        if outs and not differing:
            state.unbuilt.append(stage)
            state.absent |= {path for path, _ in outs}
            state.in_cache &= all(word == "deleted" for _, word in outs)
    return state


def _entries(change: Any) -> list[tuple[str, Path | None, str]]:
    """One DVC status entry, `{"changed deps": {"params.yaml": "modified"}}` or "always changed", as
    (kind, path, state) triples."""
    if not isinstance(change, dict):
        return [(str(change), None, "")]
    return [(kind, Path(path), str(word)) for kind, paths in change.items()
            for path, word in (paths.items() if isinstance(paths, dict) else [(paths, "")])]


def _in_words(changes: list[tuple[str, Path | None, str]]) -> str:
    """`changed deps: params.yaml (modified); always changed`."""
    said: dict[str, list[str]] = {}
    for kind, path, word in changes:
        said.setdefault(kind, [])
        if path is not None:
            said[kind].append(f"{path} ({word})" if word else str(path))
    return "; ".join(f"{kind}: {', '.join(paths)}" if paths else kind for kind, paths in said.items())


def _lock_problem(stage: str, changes: list[tuple[str, Path | None, str]], cached: set[Path]) -> Problem:
    """One line: the stage, what differs, and a command that mends it with whatever cache there is."""
    outs = [(path, word) for kind, path, word in changes if kind == "changed outs" and path is not None]
    committed = [path for path, _ in outs if not any(path == out or out in path.parents for out in cached)]
    if outs and len(committed) == len(changes):  # only git-tracked outputs differ
        advice = f"`git checkout -- {' '.join(map(str, committed))}` restores it"
    elif outs and all(word == "modified" for _, word in outs) and len(outs) == len(changes):
        advice = f"`dvc checkout --force {stage}` restores it from DVC's cache"  # "modified": the cache has it
    else:
        advice = f"`dvc repro {stage}` reruns it"
    said = _in_words(changes)
    if len(said) > 80:
        said = said[:77] + "..."
    return Problem(LOCK, f"{LOCK}: stage {stage} is out of date ({said}); {advice}")


def error_problem(err: VitheoryError) -> Problem:
    """The problem an error raised by a check or a claim is: its artifact, where the error names one."""
    return Problem(err.path if isinstance(err, ArtifactError) else None, str(err))


def _absent(problem: Problem, root: Path, absent: set[Path]) -> bool:
    """Whether a problem is about a file inside an output that is simply not built."""
    if problem.path is None:
        return False
    named = Path(os.path.relpath(problem.path, root))
    return any(named == out or out in named.parents for out in absent)


def rebuild_seconds(root: Path, unbuilt: list[str]) -> tuple[float, list[str]] | None:
    """The seconds the unbuilt stages took in the committed run (docs/stage_times.yaml), and the unbuilt
    stages it did not time (added since); None when no stage time is recorded."""
    logged = stage_seconds(read_stage_times(root))
    if not logged:
        return None
    return sum(logged.get(stage, 0.0) for stage in unbuilt), [stage for stage in unbuilt if stage not in logged]


def not_built_line(root: Path, state: LockState, skipped: list[str]) -> str:
    """The one line that says what was not checked, and the commands that bring the outputs."""
    folders = ", ".join(sorted({f"{path.parts[0]}/" for path in state.absent}))
    said = f"not built: {len(state.unbuilt)} stages' outputs in {folders} are absent"
    if skipped:
        said += f" ({', '.join(skipped)} unchecked)"
    if state.in_cache:
        return said + "; `dvc checkout` restores them from DVC's cache"
    rebuild = rebuild_seconds(root, state.unbuilt)
    cost = ""
    if rebuild is not None:
        seconds, untimed = rebuild
        cost = (f" (~{seconds / 60:.0f} min, docs/REVIEWING.md"
                + (f", and {', '.join(untimed)}, which it does not time yet" if untimed else "") + ")")
    return said + f"; get them with `dvc pull` (from a remote, or a bundle: README) or `dvc repro`{cost}"


@dataclass(frozen=True)
class ClaimCheck:
    """One claim evaluated again from the artifacts: its record, and whether it agrees with the stored one."""

    claim: str
    record: dict[str, Any]
    agrees: bool


@dataclass
class Verification:
    """What `verify` found: one check per claim measured, every problem, what DVC found, and the checks
    and claims left unchecked because their inputs are not built."""

    claims: list[ClaimCheck]
    problems: list[Problem]
    lock: LockState
    skipped: list[str]
    notes: list[str] = field(default_factory=list)  # what was not checked, and why (not a problem)


def verify(root: Path = Path(".")) -> Verification:
    """The workspace against dvc.lock, every package's re-derivations, and every claim evaluated again
    against reports/claims.json."""
    state = lock_state(root)
    problems, skipped = list(state.problems), []

    def unchecked(name: str, problem: Problem) -> bool:
        if _absent(problem, root, state.absent):
            skipped.append(name)
            return True
        return False

    params = load_params(root / DEFAULT_PATH)
    for check in (check for package in PACKAGES for check in package.checks):
        try:
            problems += check(root)
        except VitheoryError as err:  # already names the file and the stage to rerun
            problem = error_problem(err)
            if not unchecked(check.__name__, problem):
                problems.append(problem)
        except (OSError, KeyError, ValueError, TypeError) as err:
            problems.append(Problem(None, f"{check.__name__}: an artifact lacks what it should hold ({err!r}); "
                                          "run `dvc repro`"))
    try:
        stored = {c["id"]: c for c in read_json(root / artifact("claims"))["claims"]}
    except VitheoryError as err:
        return Verification([], [*problems, error_problem(err)], state, skipped)
    notes = []
    try:
        atlas_problems, not_rederived = atlas.rederive(root)
    except VitheoryError as err:
        atlas_problems, not_rederived = [error_problem(err)], None
    problems += atlas_problems
    if not_rederived:
        notes.append(f"the atlas ({artifact('atlas_table')}) not re-derived: {not_rederived}")
    checked = []
    for paper in PAPERS:
        for claim in paper.claims:
            try:
                record = evaluate(claim, paper.key, root, params.report)
            except VitheoryError as err:
                problem = error_problem(err)
                if not unchecked(claim.id, problem):
                    problems.append(Problem(problem.path, f"{claim.id}: cannot be measured: {err}"))
                continue
            except KeyError as err:
                problems.append(Problem(None, f"{claim.id}: cannot be measured: {err}"))
                continue
            agrees = claim.id in stored and same(record, stored[claim.id])
            if not agrees:
                problems += changed_numbers(record, stored.get(claim.id, {}))
            checked.append(ClaimCheck(claim.id, record, agrees))
    return Verification(checked, problems, state, skipped, notes)


def changed_numbers(record: dict[str, Any], stored: dict[str, Any]) -> list[Problem]:
    """One problem per number (and the verdict) that the artifacts re-derive otherwise than the stored record
    holds; one for the record when only its text differs."""
    where, claim = artifact("claims"), record["id"]
    if not stored:
        return [Problem(where, f"{claim}: not in {where}; run `dvc repro report`")]
    found = [f"{claim}: verdict {record['verdict']} re-derived from the artifacts, {stored['verdict']} in {where}"
             ] if record["verdict"] != stored.get("verdict") else []
    measured, kept = record["measured"], stored.get("measured", {})
    found += [f"{claim}: {quantity} = {fmt(measured.get(quantity))} re-derived from the artifacts, "
              f"{fmt(kept.get(quantity))} in {where}; run `dvc repro report`"
              for quantity in dict.fromkeys([*measured, *kept]) if not same(measured.get(quantity), kept.get(quantity))]
    return [Problem(where, text) for text in found] or [Problem(
        where, f"{claim}: its record in {where} differs from the re-derived one in its text, not in a number; "
               "run `dvc repro report`")]


def _table(checked: list[ClaimCheck]) -> str:
    """Per claim a line (verdict, agreement with the stored record), then one per criterion and condition
    (measured [interval] (threshold): its verdict), lines wrapped at WIDTH."""
    lines = [f"{'claim':6} {'verdict':15} stored", "       criterion or condition: measured [interval] (threshold): verdict"]
    for row in checked:
        record = row.record
        lines.append(f"{row.claim:6} {record['verdict']:15} {'agrees' if row.agrees else 'DIFFERS'}")
        for kind, check in [("criterion", c) for c in record["criteria"].values()] + \
                           [("condition", c) for c in record["conditions"].values()]:
            said = (f"{kind} {check['quantity']} = {fmt(record['measured'][check['quantity']])} "
                    f"[{', '.join(fmt(end) for end in check['interval'])}] ({check['threshold']}): {check['verdict']}")
            lines += textwrap.wrap(said, WIDTH, initial_indent=" " * 7, subsequent_indent=" " * 9)
    return "\n".join(lines)


def committed_claims(root: Path, revision: str) -> dict[str, dict[str, Any]]:
    """reports/claims.json as committed at `revision`, by claim id."""
    path = artifact("claims").as_posix()
    shown = subprocess.run(["git", "show", f"{revision}:{path}"], cwd=root, capture_output=True, text=True)
    if shown.returncode != 0:
        raise VitheoryError(f"{path} at {revision}: {shown.stderr.strip() or 'not found'}; name a git revision "
                            "that holds the results to compare with")
    return {c["id"]: c for c in json.loads(shown.stdout)["claims"]}


def _half_width(check: dict[str, Any]) -> float:
    low, high = check["interval"]
    return 0.0 if low is None else (high - low) / 2


def disagreements(record: dict[str, Any], other: dict[str, Any], revision: str) -> tuple[list[Problem], list[str]]:
    """Where a claim's record differs from the one at `revision`: (problems, moves). A criterion's number
    beyond the tolerance (the larger half-width of the two intervals) is a problem, and so is a changed
    verdict with one; a changed verdict whose every number agrees within its tolerance is a move: the same
    measurement, its spread across the threshold on one run and not on the other (a rerun elsewhere)."""
    found: list[str] = []
    for criterion, check in record["criteria"].items():
        quantity = check["quantity"]
        here, there = record["measured"][quantity], other["measured"].get(quantity)
        if here is None or there is None:
            if here != there:
                found.append(f"{record['id']}: {quantity} = {fmt(here)} here, {fmt(there)} at {revision}")
            continue
        tolerance = max(_half_width(check), _half_width(other["criteria"].get(criterion, check)))
        if not math.isclose(here, there, rel_tol=1e-9, abs_tol=tolerance):
            found.append(f"{record['id']}: {quantity} = {fmt(here)} here, {fmt(there)} at {revision}: differs by "
                         f"{fmt(abs(here - there))}, beyond the tolerance {fmt(tolerance)}")
    flipped = f"{record['id']}: {record['verdict']} here, {other['verdict']} at {revision}"
    if record["verdict"] == other["verdict"]:
        return [Problem(artifact("claims"), text) for text in found], []
    if found:
        return [Problem(artifact("claims"), text) for text in [flipped, *found]], []
    return [], [f"moved: {flipped}, every deciding number within its tolerance (a move within the intervals, "
                "not an inconsistency)"]


def say(line: str) -> None:
    """One of verify's lines, wrapped at WIDTH columns, its continuation indented."""
    print(textwrap.fill(line, WIDTH, subsequent_indent="  ", break_on_hyphens=False))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vitheory.verify", description=__doc__.split("\n\n")[0],
                                     epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", metavar="REV", help="git revision whose committed claims a rerun must match")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 when everything is consistent but some claim does not hold or is inconclusive")
    args = parser.parse_args(argv)
    root = Path(".")
    try:
        found = verify(root)
    except VitheoryError as err:
        print(f"error: {err}", file=sys.stderr)
        return INCONSISTENT
    problems, state, skipped = found.problems, found.lock, found.skipped
    if args.against:
        try:
            other = committed_claims(root, args.against)
        except VitheoryError as err:
            other = {}
            problems.append(error_problem(err))
        for row in found.claims if other else []:
            if row.claim not in other:
                problems.append(Problem(artifact("claims"), f"{row.claim}: not among the claims at {args.against}"))
            elif not {"verdict", "criteria"} <= set(other[row.claim]):
                problems.append(Problem(artifact("claims"), f"{row.claim}: the claims at {args.against} have no verdicts "
                                        "and intervals (an older format); compare with a revision that has them"))
            else:
                differing, moved = disagreements(row.record, other[row.claim], args.against)
                problems += differing
                found.notes += moved
    print(_table(found.claims))
    for note in found.notes:
        say(note)
    for problem in problems:
        say(f"problem: {problem.text}")
    if problems:
        if state.unbuilt:
            say(not_built_line(root, state, skipped))
        say(f"inconsistent: {len(problems)} problems (exit code {INCONSISTENT})")
        return INCONSISTENT
    if args.against and state.unbuilt:  # the claims were re-evaluated from the committed tables: no rerun
        say(f"nothing built to compare with {args.against}: the claims here come from the tables git holds")
        say(not_built_line(root, state, skipped))
        return NOT_BUILT
    if args.against:
        moves = sum(note.startswith("moved: ") for note in found.notes)
        say(f"verified; every number agrees with {args.against} within its tolerance"
            + (f", {moves} verdicts moved within their intervals" if moves else ", and every verdict"))
    if state.unbuilt:
        say(f"consistent: what git holds; the {len(found.claims)} claims, re-evaluated from reports/, agree with "
            f"{artifact('claims')}")
        say(not_built_line(root, state, skipped))
        return NOT_BUILT
    if args.against:
        return CONSISTENT
    failed = [f"{row.claim} ({row.record['verdict']})" for row in found.claims if row.record["verdict"] != HOLDS]
    if failed:
        say(f"verified: consistent; claims that do not hold or are inconclusive: {', '.join(failed)}")
        return STRICT_FAILED if args.strict else CONSISTENT
    say("verified: consistent; every claim holds")
    return CONSISTENT


if __name__ == "__main__":
    sys.exit(main())
