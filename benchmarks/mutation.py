"""Mutation score of the science's critical modules (issue 44): mutmut plants one small change at a time
(an operator, a constant, a keyword) in a module and runs the fast tests that reach the changed
function; a mutant no test fails on is a gap in the tests, or a change that does not change behaviour.

Run from the repository root, in the venv with requirements-dev.txt installed (docs/MUTATION.md):

    python -m benchmarks.mutation                       # every module of MODULES
    python -m benchmarks.mutation vitheory/pk22/noise.py --workers 1
    python -m benchmarks.mutation --only issue-53       # the functions of FUNCTIONS["issue-53"] only
    python -m benchmarks.mutation --report <modules>    # the counts so far of a run still going

It mutates a copy of the committed tree (`git archive HEAD`) in --workdir, never the working tree, and
prints killed / survived / timeout per module, the score, and every survivor's diff (also written to
<workdir>/survivors.md). Not part of the test suite: hours on two cores for every module.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# module -> the fast tests that target it (globs under the repository root)
MODULES = {
    # the claims modules: their planted-number tests, the per-paper verdict tables through `evaluate`, and
    # (for the interval and verdict code) the verdict rule and the coverage tests
    "vitheory/core/claims.py": ["tests/core/test_verdict_rule.py", "tests/core/test_coverage.py",
                                "tests/*/test_verdict_table.py", "tests/*/test_*claims*.py"],
    "vitheory/core/intervals.py": ["tests/core/test_verdict_rule.py", "tests/core/test_coverage.py",
                                   "tests/*/test_verdict_table.py", "tests/*/test_*claims*.py"],
    # tests/test_report.py says every claim's regime, which the report stage calls for each claim
    "vitheory/li23/claims.py": ["tests/li23/test_claims.py", "tests/li23/test_verdict_table.py",
                                "tests/images/test_cluttered.py", "tests/test_report.py"],
    "vitheory/jsl22/claims.py": ["tests/jsl22/test_*claims*.py", "tests/jsl22/test_verdict_table.py",
                                 "tests/test_report.py"],
    "vitheory/pk22/claims.py": ["tests/pk22/test_*claims*.py", "tests/pk22/test_verdict_table.py",
                                "tests/test_report.py"],
    # a seed plan decides drawn runs by the verdict's own methods: the plan tests, and the verdict rule's
    "vitheory/core/planning.py": ["tests/core/test_power.py", "tests/core/test_verdict_rule.py"],
    "vitheory/core/criteria.py": ["tests/core/test_verdict_rule.py", "tests/core/test_power.py",
                                  "tests/*/test_verdict_table.py"],
    "vitheory/li23/token_keeping.py": ["tests/li23/test_token_keeping.py"],
    "vitheory/pk22/noise.py": ["tests/pk22/test_pk.py"],
    "vitheory/pk22/hessian.py": ["tests/pk22/test_pk.py", "tests/pk22/test_hessian.py"],
}
# ours: the dense-Hessian comparisons take a minute each on our cores; tests/pk22/test_hessian.py checks
# the same helpers on small explicit matrices and a 27-parameter network in a second
SLOW = ["tests/pk22/test_pk.py::test_top_eigenvalues_match_a_dense_eigendecomposition",
        "tests/pk22/test_pk.py::test_lanczos_quadrature_agrees_with_a_dense_eigendecomposition"]
# named selections of functions (mutmut's mutant-name globs, `x_<function>__mutmut_*` for a module-level function):
# issue 53 asks for the claims added last (LI-6, JSL-7, JSL-8, PK-9) and the paired test's path, whose
# threshold is non-zero where a claim's direction is measured against a margin
FUNCTIONS = {
    "issue-53": [
        *(f"vitheory.li23.claims.x_{f}__mutmut_*" for f in
          ("_noise_setting", "_noise_samples", "_seed_n_mins", "_mean_log_ratio", "_li6_statistics")),
        *(f"vitheory.jsl22.claims.x_{f}__mutmut_*" for f in
          ("_jsl7_regime", "_jsl7_samples", "_share", "_jsl7_statistics",
           "_pos_dim_regime", "_pos_dim_seeds", "_pos_dim_statistics")),
        *(f"vitheory.pk22.claims.x_{f}__mutmut_*" for f in ("_stages", "_stage_ends", "_pk9_statistics")),
        *(f"vitheory.core.claims.x_{f}__mutmut_*" for f in ("decide", "_sign_flip_rows")),
        *(f"vitheory.core.intervals.x_{f}__mutmut_*" for f in
          ("every_sign_pattern", "sign_flip_p_values", "_sign_flip", "_paired_check",
           "skewed_sign_flip_false_holds")),
    ],
    # the seed plan by the verdict's own method, the methods' drawn runs, the skewness checks' margin and the
    # counted kind, the criterion's origin
    "issue-66": [
        *(f"vitheory.core.planning.x_{f}__mutmut_*" for f in ("fewest", "seeds_needed")),
        *(f"vitheory.core.planning.xǁDrawnPowerǁ{f}__mutmut_*" for f in ("__init__", "power")),
        *(f"vitheory.core.intervals.x_{f}__mutmut_*" for f in
          ("_unit_values", "_student_t_runs", "_per_unit_drawn", "_clopper_pearson_runs", "_order_statistics_runs",
           "sign_flip_rows", "_sign_flip_runs", "_percentile_bootstrap_runs", "_paired_units", "_median_units",
           "_counted", "normal_skewness_bound", "_skewed_beyond_normal", "_mean_check", "_paired_check")),
        "vitheory.core.criteria.xǁCriterionǁorigin__mutmut_*",
    ],
}
# the files the tests read besides the package and tests/ (which mutmut copies itself)
ALSO_COPY = ["params.yaml", "presets", "stages", "dvc.yaml", "benchmarks"]


def mutmut_config(modules: list[str], tree: Path, tests: list[str] = ()) -> str:
    """The [tool.mutmut] section: the modules to mutate and the tests to run (the modules' own, or `tests`)."""
    globs = tests or [g for m in modules for g in MODULES[m]]
    tests = sorted({str(p.relative_to(tree)) for g in globs for p in tree.glob(g)})
    selection = ", ".join(f'"{t}"' for t in tests)
    deselect = ", ".join(f'"--deselect", "{t}"' for t in SLOW)
    return f"""
[tool.mutmut]
source_paths = ["vitheory"]
only_mutate = [{", ".join(f'"{m}"' for m in modules)}]
also_copy = [{", ".join(f'"{p}"' for p in ALSO_COPY)}]
pytest_add_cli_args = ["-n", "0", "-p", "no:cacheprovider", {deselect}]
pytest_add_cli_args_test_selection = [{selection}]
process_isolation = "forkserver"  # torch is not fork-safe
"""


def summary(workdir: Path, modules: list[str], only: list[str] = ()) -> str:
    """Markdown: counts per module and every survivor's diff; with `only`, of the mutants it names."""
    run = lambda *args: subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=workdir, check=True,  # noqa: E731
                                       capture_output=True, text=True).stdout
    status = dict(re.findall(r"^\s*(\S+): (.+)$", run("results", "--all", "true"), flags=re.M))
    lines = ["| module | mutants | killed | survived | timeout | other | score |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    survivors = []
    for module in modules:
        dotted = module.removesuffix(".py").replace("/", ".") + "."
        mine = {name: s for name, s in status.items() if name.startswith(dotted)
                and (not only or any(fnmatch.fnmatch(name, pattern) for pattern in only))}
        count = Counter(mine.values())
        other = len(mine) - count["killed"] - count["survived"] - count["timeout"]
        checked = len(mine) - count["not checked"]
        score = f"{(count['killed'] + count['timeout']) / checked:.0%}" if checked else "-"
        lines.append(f"| {module} | {len(mine)} | {count['killed']} | {count['survived']} | {count['timeout']} "
                     f"| {other} | {score} |")
        survivors += [name for name, s in sorted(mine.items()) if s not in ("killed", "timeout", "not checked")]
    diffs = [f"### {name}\n```diff\n{run('show', name).strip()}\n```" for name in survivors]
    return "\n".join(lines) + "\n\nScore: (killed + timeout) / mutants checked; other: not checked yet, or neither.\n\n" + "\n\n".join(diffs) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help=f"default: all of {list(MODULES)}")
    parser.add_argument("--workers", type=int, default=1, help="mutants tested at once (mutmut --max-children)")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "vitheory-mutation")
    parser.add_argument("--only", choices=sorted(FUNCTIONS), help="mutate only these functions (their modules "
                        "are the default modules)")
    parser.add_argument("--report", action="store_true", help="only summarise the run in --workdir (running or done)")
    parser.add_argument("--tests", nargs="*", default=[], help="test globs to run instead of the modules' own (a "
                        "narrower selection for a run of --only's functions)")
    args = parser.parse_args()
    only = FUNCTIONS[args.only] if args.only else []
    if only and not args.modules:
        args.modules = sorted({re.split(r"\.x[_\u01c1]", pattern)[0].replace(".", "/") + ".py" for pattern in only})
    unknown = sorted(set(args.modules) - set(MODULES))
    if unknown:
        parser.error(f"no test selection for {unknown}: name modules of {list(MODULES)} or add them to MODULES")
    args.modules = args.modules or list(MODULES)
    if args.report:
        print(summary(args.workdir, args.modules, only))
        return
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    subprocess.run(["rm", "-rf", str(args.workdir)], check=True)
    args.workdir.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(args.workdir)], input=archive, check=True)
    with open(args.workdir / "pyproject.toml", "a") as config:
        config.write(mutmut_config(args.modules, args.workdir, args.tests))
    print(f"mutating commit {commit.strip()} in {args.workdir}", flush=True)
    # ours: one thread per test process; two threads per process on shared cores made a 3-batch fine-tune 5x slower
    subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(args.workers), *only],
                   cwd=args.workdir, check=True, env=os.environ | {"OMP_NUM_THREADS": "1"})
    report = summary(args.workdir, args.modules, only)
    (args.workdir / "survivors.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
