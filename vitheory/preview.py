"""`python -m vitheory.preview -S key=value [-S ...]`: which stages a change of params would rerun, without
running any, and params.yaml left byte for byte as it was.

`dvc exp run --dry` cannot say it (DVC 3.67 runs a dry experiment in a temporary copy where a skipped stage's
outputs are not checked out, so it stops on the next stage's missing dependency). This applies the
overrides with DVC's own writer (`dvc.utils.hydra.apply_overrides`, what `dvc exp run -S` does), validates the
result with the params loader (a refused value is one line, and nothing runs), asks `dvc repro --dry` which
stages would run, and restores params.yaml's bytes whatever happens. A stage that would run with the params as
they are (an output not built or pulled here) is named apart: the change is not what reruns it.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from vitheory.core.errors import VitheoryError
from vitheory.params import DEFAULT_PATH, load_params

RUNNING = re.compile(r"^Running stage '([^']+)'", re.MULTILINE)
CONSTANT = "constant_output"  # dvc.yaml `meta: {constant_output: true}`: a stage a change reruns, its output the same


def stages_to_run(root: Path) -> set[str]:
    """The stages whose own inputs changed: what `dvc repro --dry` would run first. (It names no stage after
    them: their inputs, the first ones' outputs, have not changed yet.)"""
    dry = subprocess.run([sys.executable, "-m", "dvc", "repro", "--dry"], cwd=root, capture_output=True, text=True)
    if dry.returncode != 0:
        last = (dry.stderr.strip().splitlines() or ["no output"])[-1]
        raise VitheoryError(f"`dvc repro --dry` failed ({last}): run it to see why")
    return set(RUNNING.findall(dry.stdout))


def with_dependents(root: Path, names: set[str]) -> list[str]:
    """`names` and every stage that depends on one of them, in the order `dvc repro` runs them; none through a
    stage marked `meta: {constant_output: true}` in dvc.yaml (check_params: it lists every key, every stage
    reads its output, and that output never changes)."""
    import networkx as nx
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        graph = repo.index.graph  # an edge from each stage to the stage whose output it reads
        picked = {stage for stage in graph if stage.name in names}
        picked |= {dependent for stage in set(picked) if not (stage.meta or {}).get(CONSTANT)
                   for dependent in nx.ancestors(graph, stage)}
        return [stage.name for stage in reversed(list(nx.topological_sort(graph))) if stage in picked]


def preview(root: Path, overrides: list[str]) -> tuple[list[str], list[str]]:
    """(the stages the overrides make rerun, the stages that would rerun without them); params.yaml restored."""
    from dvc.utils.hydra import apply_overrides  # DVC's import takes a second

    path = root / DEFAULT_PATH
    before = path.read_bytes()
    already = stages_to_run(root)
    try:
        try:
            apply_overrides(str(path), overrides)
        except Exception as err:  # hydra's and DVC's own errors: a key not in params.yaml, a bad override
            raise VitheoryError(f"{' '.join(overrides)}: {str(err).splitlines()[0]}") from None
        load_params(path)
        changed = stages_to_run(root)
    finally:
        path.write_bytes(before)
    anyway = with_dependents(root, already)
    return [stage for stage in with_dependents(root, changed) if stage not in anyway], anyway


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vitheory.preview", description=__doc__.split("\n\n")[0])
    parser.add_argument("-S", "--set-param", dest="overrides", action="append", required=True, metavar="KEY=VALUE",
                        help="a params change, as `dvc exp run -S` takes it (repeatable)")
    args = parser.parse_args(argv)
    try:
        rerun, already = preview(Path.cwd(), args.overrides)
    except VitheoryError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{' '.join(args.overrides)} reruns {len(rerun)} stages: {', '.join(rerun) or 'none'}")
    if already:
        print(f"already to run here, with or without it (outputs not built or pulled): {', '.join(already)}")
    print("a stage run before with the same inputs comes back from the run-cache instead of running")
    return 0


if __name__ == "__main__":
    sys.exit(main())
