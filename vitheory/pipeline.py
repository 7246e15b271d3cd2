"""dvc.yaml's code deps, derived from what each stage imports: `--check` lists every stage whose deps
differ, `--fix` rewrites them (comments and the rest of dvc.yaml kept). A stage depends on its script,
`stages/__init__.py`, `vitheory/__init__.py` (the pinned CPU numerics), every vitheory module its script
imports, directly or not, and the params check's output (every stage but the check itself), so that
DVC reruns a stage exactly when code it runs changes, and never before the whole params file passed.

    python -m vitheory.pipeline --check    # exit 1 and say what differs
    python -m vitheory.pipeline --fix      # rewrite the deps lists
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from vitheory.core.paths import DVC_YAML, ROOT
from vitheory.preset import round_trip_yaml

CHECK_STAGE, CHECK_OUTPUT = "check_params", "${paths.params_check}"
CODE = ("vitheory/", "stages/")


def direct_imports(path: Path, root: Path = ROOT) -> set[str]:
    """The vitheory module files `path` imports itself, relative to `root` (`from vitheory.pk22 import
    noise` is the file vitheory/pk22/noise.py; a package's __init__.py holds no code)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            if isinstance(node, ast.ImportFrom) and node.module else [])
        for name in names:
            file = root / (name.replace(".", "/") + ".py")
            if name.startswith("vitheory") and file.is_file():
                found.add(file.relative_to(root).as_posix())
    return found


def imported_modules(script: Path, root: Path = ROOT) -> set[str]:
    """The vitheory module files `script` imports, directly or not, relative to `root`."""
    seen: set[str] = set()
    pending = [script]
    while pending:
        new = direct_imports(pending.pop(), root) - seen
        seen |= new
        pending += [root / relative for relative in new]
    return seen


def stage_script(stage: dict[str, Any]) -> str:
    """The script of a stage whose command is `python -m stages.<name> ...`."""
    return stage["cmd"].split()[2].replace(".", "/") + ".py"


def expected_deps(name: str, stage: dict[str, Any], root: Path = ROOT) -> list[str]:
    """The deps a stage should list: its artifact deps as written, the params check's output, then its code."""
    script = stage_script(stage)
    code = imported_modules(root / script, root) | {script, "stages/__init__.py", "vitheory/__init__.py"}
    artifacts = [dep for dep in stage.get("deps", []) if not dep.startswith(CODE) and dep != CHECK_OUTPUT]
    return artifacts + ([] if name == CHECK_STAGE else [CHECK_OUTPUT]) + sorted(code)


def _load(path: Path) -> tuple[YAML, Any]:
    round_trip = round_trip_yaml()
    round_trip.indent(mapping=2, sequence=4, offset=2)
    return round_trip, round_trip.load(path.read_text())


def differences(path: Path = DVC_YAML) -> list[str]:
    """One line per stage whose code deps are not what it imports."""
    _, pipeline = _load(path)
    found = []
    for name, stage in pipeline["stages"].items():
        listed, expected = list(stage.get("deps", [])), expected_deps(name, stage, path.parent)
        if listed != expected:
            missing, extra = sorted(set(expected) - set(listed)), sorted(set(listed) - set(expected))
            found.append(f"stage {name}: deps " + "; ".join(
                part for part in (f"missing {missing}" if missing else "", f"not imported {extra}" if extra else "",
                                  "out of order" if not (missing or extra) else "") if part))
    return found


def fix(path: Path = DVC_YAML) -> list[str]:
    """Rewrite every stage's deps as `expected_deps`; return the stages changed."""
    round_trip, pipeline = _load(path)
    changed = []
    for name, stage in pipeline["stages"].items():
        expected = expected_deps(name, stage, path.parent)
        if list(stage.get("deps", [])) != expected:
            stage["deps"][:] = expected
            changed.append(name)
    with open(path, "w") as handle:
        round_trip.dump(pipeline, handle)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vitheory.pipeline", description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--check", action="store_true", help="say which stages' deps differ; exit 1 if any")
    action.add_argument("--fix", action="store_true", help="rewrite dvc.yaml's deps lists")
    args = parser.parse_args(argv)
    if args.fix:
        changed = fix()
        print(f"dvc.yaml: deps rewritten for {', '.join(changed)}" if changed else "dvc.yaml: every deps list was right")
        return 0
    found = differences()
    for line in found:
        print(line)
    if found:
        print("run `python -m vitheory.pipeline --fix` to rewrite them")
        return 1
    print("dvc.yaml: every stage's deps are what it imports")
    return 0


if __name__ == "__main__":
    sys.exit(main())
