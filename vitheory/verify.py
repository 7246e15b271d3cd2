"""Check the results in the repository without rerunning the pipeline, or a rerun against them.

    python -m vitheory.verify                    # the workspace is consistent
    python -m vitheory.verify --against main     # ... and agrees with the claims committed at `main`

1. The workspace matches dvc.lock: every stage's deps (code, params, data) and outputs hash as
   recorded (`dvc status` is empty).
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
problem by name. Exit code 0: everything matches, whatever the verdicts (a claim that does not hold is
a result, not an inconsistency); 2: a mismatch or a missing or unreadable artifact. With `--strict`,
exit code 1 when everything matches but some claim does not hold or is inconclusive.

With `--against REV` (a rerun on another machine, say, against the committed results), it also
compares every claim with `reports/claims.json` as committed at the git revision REV: the verdicts
must be the same, and each criterion's number must agree within its tolerance, the larger
half-width of the two runs' intervals (the spread over seeds that each run measured; a number with
no spread must agree to 1e-9 relative). Exit code 0: consistent and in agreement; 2: otherwise,
each disagreement a `problem:` line.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

from vitheory.core.artifacts import read_json
from vitheory.core.claims import HOLDS, evaluate
from vitheory.core.errors import VitheoryError
from vitheory.core.paths import artifact
from vitheory.core.rederive import same
from vitheory.papers import PACKAGES, PAPERS
from vitheory.params import DEFAULT_PATH, load_params
from vitheory.report import fmt, interval_settings


def lock_problems(root: Path) -> list[str]:
    from dvc.repo import Repo  # imported here: DVC is slow to import and only this check needs it

    status = Repo(str(root)).status()
    return [f"dvc.lock: stage {stage} is out of date ({_in_words(changes)}); run `dvc repro {stage}` to rebuild "
            f"it; to restore the outputs dvc.lock records instead, `git checkout` the git-tracked ones (reports/) "
            f"and `dvc checkout --force {stage}` the ones in DVC's cache (data/, models/)"
            for stage, changes in status.items()]


def _in_words(changes: list[Any]) -> str:
    """DVC's status of one stage, `[{"changed deps": {"params.yaml": "modified"}}, "always changed"]`, as
    `changed deps: params.yaml (modified)`."""
    said = []
    for change in changes:
        if not isinstance(change, dict):
            said.append(str(change))
            continue
        for kind, paths in change.items():
            listed = paths.items() if isinstance(paths, dict) else [(paths, None)]
            said.append(f"{kind}: " + ", ".join(f"{path} ({state})" if state else str(path) for path, state in listed))
    return "; ".join(said)


def verify(root: Path = Path(".")) -> tuple[list[dict[str, Any]], list[str]]:
    """(one row per claim, problems). A problem is a one-line description naming the artifact."""
    problems = lock_problems(root)
    params = load_params(root / DEFAULT_PATH)
    for check in (check for package in PACKAGES for check in package.checks):
        try:
            problems += check(root)
        except VitheoryError as err:  # already names the file and the stage to rerun
            problems.append(str(err))
        except (OSError, KeyError, ValueError, TypeError) as err:
            problems.append(f"{check.__name__}: an artifact lacks what it should hold ({err!r}); run `dvc repro`")
    try:
        stored = {c["id"]: c for c in read_json(root / artifact("claims"))["claims"]}
    except VitheoryError as err:
        return [], problems + [str(err)]
    rows = []
    for paper in PAPERS:
        for claim in paper.claims:
            try:
                record = evaluate(claim, paper.key, root, interval_settings(params))
            except (VitheoryError, KeyError) as err:
                problems.append(f"{claim.id}: cannot be measured: {err}")
                continue
            agrees = claim.id in stored and same(record, stored[claim.id])
            if not agrees:
                problems.append(f"{claim.id}: {artifact('claims')} does not match the artifacts; "
                                "run `dvc repro report`")
            rows.append({"claim": claim.id, "record": record, "agrees": agrees})
    return rows, problems


def _table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'claim':6} {'verdict':15} {'stored':7} measured (threshold)"]
    for row in rows:
        record = row["record"]
        parts = ", ".join(f"{c.split()[0]} = {fmt(record['measured'][c.split()[0]])} "
                          f"[{', '.join(fmt(end) for end in check['interval'])}] ({check['threshold']})"
                          for c, check in record["criteria"].items())
        lines.append(f"{row['claim']:6} {record['verdict']:15} {'agrees' if row['agrees'] else 'DIFFERS':7} {parts}")
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


def disagreements(record: dict[str, Any], other: dict[str, Any], revision: str) -> list[str]:
    """Where a claim's record differs from the one at `revision`: its verdict, or a criterion's number
    beyond the tolerance (the larger half-width of the two intervals)."""
    found = []
    if record["verdict"] != other["verdict"]:
        found.append(f"{record['id']}: {record['verdict']} here, {other['verdict']} at {revision}")
    for criterion, check in record["criteria"].items():
        quantity = criterion.split()[0]
        here, there = record["measured"][quantity], other["measured"].get(quantity)
        if here is None or there is None:
            if here != there:
                found.append(f"{record['id']}: {quantity} = {fmt(here)} here, {fmt(there)} at {revision}")
            continue
        tolerance = max(_half_width(check), _half_width(other["criteria"].get(criterion, check)))
        if not math.isclose(here, there, rel_tol=1e-9, abs_tol=tolerance):
            found.append(f"{record['id']}: {quantity} = {fmt(here)} here, {fmt(there)} at {revision}: differs by "
                         f"{fmt(abs(here - there))}, beyond the tolerance {fmt(tolerance)}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", metavar="REV", help="git revision whose committed claims a rerun must match")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 when everything is consistent but some claim does not hold or is inconclusive")
    args = parser.parse_args(argv)
    rows, problems = verify()
    if args.against:
        try:
            other = committed_claims(Path("."), args.against)
        except VitheoryError as err:
            other, problems = {}, problems + [str(err)]
        for row in rows if other else []:
            if row["claim"] not in other:
                problems.append(f"{row['claim']}: not among the claims at {args.against}")
            elif not {"verdict", "criteria"} <= set(other[row["claim"]]):
                problems.append(f"{row['claim']}: the claims at {args.against} have no verdicts and intervals (an "
                                "older format); compare with a revision that has them")
            else:
                problems += disagreements(row["record"], other[row["claim"]], args.against)
    print(_table(rows))
    for problem in problems:
        print(f"problem: {problem}")
    if problems:
        return 2
    if args.against:
        print(f"verified; every verdict and number agrees with {args.against} within its tolerance")
        return 0
    failed = [f"{row['claim']} ({row['record']['verdict']})" for row in rows if row["record"]["verdict"] != HOLDS]
    if failed:
        print(f"verified: consistent; claims that do not hold or are inconclusive: {', '.join(failed)}")
        return 1 if args.strict else 0
    print("verified: consistent; every claim holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
