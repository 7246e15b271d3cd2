"""What a reviewer checks first: the generated parts of the reviewer's guide (docs/REVIEWING.md) and of
the README, and the citation metadata.

The guide's generated blocks: the map from each claim to the stages, artifacts, figures and report
rows that support it (from the paper table and dvc.yaml), the committed run's verdicts (from
reports/verdicts.json), and the time each stage took in the committed run (docs/stage_times.yaml, which
`--record-run` writes from what each stage logs of its own run on this machine, reports/timings:
dvc.lock keeps no times). The README's: the committed
run's results, claim by claim (from reports/claims.json), and where each claim's code lives (its
stages, the modules of the science they and its check call, and their tests; from the paper table,
dvc.yaml and the imports), the real-image models' test accuracies (from train_real's and pk_train's
tables), and the first screen's cost of each command (from docs/measured.yaml and the
stage times).

    python -m vitheory.reviewing           # rewrite the blocks
    python -m vitheory.reviewing --record-run  # after a whole run: its stage times first, then the blocks
    python -m vitheory.reviewing --check   # exit 1 if a generated block is stale, or CITATION.cff
                                           # does not match the project
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import re
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from vitheory.core.claims import Claim, labelled_checks
from vitheory.core.artifacts import read_json
from vitheory.core.cli import TIMINGS
from vitheory.core.figures import read_frame
from vitheory.core.paths import ROOT, stages
from vitheory.core.paths import artifact
from vitheory.images.params import REAL_MODELS
from vitheory.jsl22.figures import real_runs
from vitheory.measured import MEASURED, Measurement, duration, load_measured
from vitheory.papers import PAPERS
from vitheory.pipeline import direct_imports, stage_script
from vitheory.pk22 import trainings
from vitheory.reach import claim_data, upstream
from vitheory.report import fmt, interval_text, machine_flippable

GUIDE = Path("docs/REVIEWING.md")
STAGE_TIMES = Path("docs/stage_times.yaml")  # the committed run's stage times, as data
README = Path("README.md")
CITATION = Path("CITATION.cff")
# Citation File Format 1.2.0's required keys, of the file and of each reference
CFF_REQUIRED = ("cff-version", "message", "title", "authors")
CFF_REFERENCE_REQUIRED = ("type", "title", "authors")
ARXIV = re.compile(r"arXiv[ :](\d{4}\.\d{4,5})")
# the checkout whose code the README's claim-code map reads (ROOT, where the documents are, may be another)
SOURCE = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"(<!-- BEGIN (?P<name>[\w-]+)[^>]*-->\n)(?P<body>.*?)(<!-- END (?P=name) -->)", re.S)


def _link(path: Path) -> str:
    """A path of the repository as a link from docs/."""
    return f"[`{path.as_posix()}`](../{path.as_posix()})"


def _passed(upstream: set[str]) -> list[str]:
    """The stages a claim's numbers pass through (`upstream` of the tables it reads), in dvc.yaml's order; a
    matrix stage by its name, all its runs meant."""
    order = list(stages())
    return sorted({name.split("@")[0] for name in upstream},
                  key=lambda base: next(i for i, name in enumerate(order) if name.split("@")[0] == base))


def claim_map() -> str:
    """One row per claim of every paper: every stage its numbers pass through (upstream of the tables it
    reads, in dvc.yaml's graph; a matrix stage by its name, all its runs meant) and `render` for its
    figures, the data it reads, its figures, and where the report states it."""
    lines = ["| claim | paper | stages (upstream of its tables; `render` draws its figures, `report` judges it) | "
             "tables and metrics it reads | figures | report |",
             "| --- | --- | --- | --- | --- | --- |"]
    for paper in PAPERS:
        for claim in paper.claims:
            data = claim_data(claim)
            figures = [path for path in claim.evidence if path.suffix == ".png"]
            passed = _passed(upstream(data)) + (["render"] if figures else []) + ["report"]
            lines.append(f"| {claim.id} | [{paper.key}] | {', '.join(f'`{s}`' for s in passed)} | "
                         f"{'<br>'.join(map(_link, data))} | {'<br>'.join(map(_link, figures))} | "
                         f"`reports/claims.json` id {claim.id}; REPORT.md claims table and section {claim.id} |")
    return "\n".join(lines) + "\n"


def _package(module: str) -> str:
    """The package of a module file of vitheory (`vitheory/pk22/hessian.py`: pk22)."""
    return Path(module).parts[1]


def _called(function: Callable) -> set[str]:
    """The vitheory module files holding what `function` names itself: its globals and its closure's."""
    names = inspect.getclosurevars(function)
    found = set()
    for value in (*names.globals.values(), *names.nonlocals.values()):
        module = value if inspect.ismodule(value) else inspect.getmodule(value)
        path = Path(getattr(module, "__file__", None) or SOURCE).resolve()
        if path.is_relative_to(SOURCE / "vitheory"):
            found.add(path.relative_to(SOURCE).as_posix())
    return found


def _science(claim: Claim, upstream: set[str]) -> list[str]:
    """The modules of the science behind a claim: those the scripts of the stages its numbers pass through
    (`upstream`) import themselves, and those its reader and statistics name; core/, the params and the
    claims module (which every claim of its paper shares) left out."""
    claims_module = inspect.getsourcefile(claim.statistics)
    found = _called(claim.samples) | _called(claim.statistics)
    for name in upstream:
        found |= direct_imports(SOURCE / stage_script(stages()[name]))
    return sorted(module for module in found if len(Path(module).parts) == 3 and _package(module) != "core"
                  and Path(module).name != "params.py" and SOURCE / module != Path(claims_module).resolve())


def _tests(claim: Claim, science: list[str]) -> list[str]:
    """The test files of its science (in the tests folder of the module's package, importing it) and those of
    its paper's tests folder that name the claim."""
    paper = Path(inspect.getsourcefile(claim.statistics)).parent.name
    named = re.compile(rf"\b{re.escape(claim.id)}\b")
    return [test for test, folder, imported, text in _test_files()
            if any(module in imported and _package(module) == folder for module in science)
            or (folder == paper and named.search(text))]


@functools.cache
def _test_files() -> list[tuple[str, str, set[str], str]]:
    """Each test file: its path, its folder's name, the vitheory modules it imports, its text."""
    return [(test.relative_to(SOURCE).as_posix(), test.parent.name, direct_imports(test), test.read_text())
            for test in sorted((SOURCE / "tests").rglob("test_*.py"))]


def claim_code() -> str:
    """The README's map from each claim to its code: the stages its numbers pass through, the modules of the
    science (`_science`) and their tests (`_tests`)."""
    lines = ["| claim | stages | science | tests |", "| --- | --- | --- | --- |"]
    for paper in PAPERS:
        for claim in paper.claims:
            passed_through = upstream(claim_data(claim))
            science = _science(claim, passed_through)
            cells = (", ".join(f"`{name}`" for name in _passed(passed_through)),
                     ", ".join(f"`{module.removeprefix('vitheory/')}`" for module in science),
                     ", ".join(f"`{test}`" for test in _tests(claim, science)))
            lines.append(f"| {claim.id} | {' | '.join(cells)} |")
    return "\n".join(lines) + "\n"


def verdicts_table(root: Path) -> str:
    """The verdict of each claim in the committed run, in the paper table's order."""
    verdicts = read_json(root / artifact("verdicts"))
    lines = ["| claim | verdict |", "| --- | --- |"]
    lines += [f"| {claim.id} | {verdicts.get(claim.id, 'missing from the run')} |"
              for paper in PAPERS for claim in paper.claims]
    return "\n".join(lines) + "\n"


def results_table(root: Path) -> str:
    """The committed run's verdicts with each criterion's value, interval, threshold and the threshold's
    source (the paper's or ours), from reports/claims.json: the README's results, never typed by hand."""
    records = {record["id"]: record for record in read_json(root / artifact("claims"))["claims"]}
    lines = ["| claim | verdict | criterion: value [95% interval] | source | other settings |",
             "| --- | --- | --- | --- | --- |"]
    for paper in PAPERS:
        for claim in paper.claims:
            if claim.id not in records:
                raise SystemExit(f"error: {artifact('claims')} has no record of {claim.id}: run `dvc repro report`, "
                                 "then `python -m vitheory.reviewing`")
            record = records[claim.id]
            checks = [(label, record["measured"][check["quantity"]], check) for label, check in labelled_checks(record)]
            values = "<br>".join(f"`{name}`: {fmt(value)} {interval_text(check['interval'])}"
                                 for name, value, check in checks)
            sources = "<br>".join(check["origin"] for _, _, check in checks)
            others = "<br>".join(f"{name}: {variant['verdict']}" for name, variant in record["variants"].items())
            lines.append(f"| {claim.id} | **{record['verdict']}** | {values} | {sources} | {others} |")
    return "\n".join(lines) + "\n"


def _mean_range(values: pd.Series) -> str:
    """A share over seeds as the README writes it: the mean (min-max), in percent."""
    return f"{values.mean():.1%} ({100 * values.min():.1f}-{values.max():.1%})"


def real_accuracy(root: Path) -> str:
    """The README's test accuracy of every real-image model, mean (range) over its seeds, from train_real's
    tables (natural and permuted pixels) and pk_train's (AlterNet on all the data; the ViT on the smallest
    fraction, beside its training error): PK-1's underfitting ViT and every compared model's distance from
    perfect, never typed by hand."""
    real = real_runs(root)
    fractions = read_frame(root / artifact("pk_train_runs"), trainings.COLUMNS)
    full = fractions[(fractions.model == "alternet") & (fractions.fraction == fractions.fraction.max())]
    small = fractions[(fractions.model == "vit") & (fractions.fraction == fractions.fraction.min())]
    seeds = sorted({len(group) for _, group in real.groupby(["model", "pixels"])} | {len(full)})
    pixels = list(dict.fromkeys(real.pixels))
    lines = [f"Test accuracy, mean (range) over {' or '.join(map(str, seeds))} seeds:", "",
             f"| model | {' | '.join(f'{kind} pixels' for kind in pixels)} |", "| --- |" + " --- |" * len(pixels)]
    for model, runs_of in real.groupby("model", sort=False):
        cells = [_mean_range(runs_of[runs_of.pixels == kind].test_accuracy) for kind in pixels]
        lines.append(f"| {REAL_MODELS[model].label} | {' | '.join(cells)} |")
    lines.append(f"| AlterNet | {_mean_range(1 - full.test_error)} |" + " |" * (len(pixels) - 1))
    # the digits have 10 classes: chance is one in ten
    lines += ["", f"On {small.fraction.iloc[0]:.0%} of the training images, the ViT reaches "
              f"{_mean_range(1 - small.test_error)[:-1]}; chance is 10%). Its training error is "
              f"{small.train_error.mean():.1%}: it underfits, which is PK-1's phenomenon."]
    return "\n".join(lines) + "\n"


def citation_problems(cff_text: str, pyproject_text: str) -> list[str]:
    """What is wrong with CITATION.cff: unparsable, a required key missing (of the file or a reference),
    a version or license other than pyproject.toml's, a paper of the pipeline not among its references."""
    try:
        cff = yaml.safe_load(cff_text)
    except yaml.YAMLError as err:
        return [f"{CITATION}: not valid YAML ({err})"]
    if not isinstance(cff, dict):
        return [f"{CITATION}: not a mapping of keys"]
    problems = [f"{CITATION}: no {key}" for key in CFF_REQUIRED if not cff.get(key)]
    if str(cff.get("cff-version")) != "1.2.0":
        problems.append(f"{CITATION}: cff-version is {cff.get('cff-version')!r}, not 1.2.0")
    project = tomllib.loads(pyproject_text)["project"]
    for key in ("version", "license"):
        if str(cff.get(key)) != project.get(key):
            problems.append(f"{CITATION}: {key} {cff.get(key)!r} is not pyproject.toml's {project.get(key)!r}")
    references = cff.get("references") or []
    for i, reference in enumerate(references):
        problems += [f"{CITATION}: reference {i + 1} has no {key}" for key in CFF_REFERENCE_REQUIRED
                     if not reference.get(key)]
    cited = {match for reference in references for match in ARXIV.findall(yaml.safe_dump(reference))}
    for paper in PAPERS:
        arxiv = ARXIV.search(paper.citation)[1]
        if arxiv not in cited:
            problems.append(f"{CITATION}: [{paper.key}] (arXiv {arxiv}) is not among the references")
    return problems


def logged_runs(root: Path) -> list[dict]:
    """Each stage's last run logged on this machine (reports/timings), in the order they finished."""
    latest: dict[str, dict] = {}
    for log in sorted((root / TIMINGS).glob("*.jsonl")):
        for line in log.read_text().splitlines():
            record = json.loads(line)
            if "stage" in record:  # records before the stage name was logged cannot be attributed
                latest[record["stage"]] = record
    return sorted(latest.values(), key=lambda record: record["finished"])


def read_stage_times(root: Path) -> list[dict]:
    """The committed run's stage records (STAGE_TIMES); none where the file is absent."""
    path = root / STAGE_TIMES
    return yaml.safe_load(path.read_text()) if path.is_file() else []


def stage_seconds(records: list[dict]) -> dict[str, float]:
    """Each stage's seconds in the run the records hold, by stage name."""
    return {record["stage"]: record["seconds"] for record in records}


def stage_times_table(records: list[dict]) -> str:
    """The guide's table: each stage's time, load and finishing time, then their total."""
    lines = ["| stage | seconds | load average: start / mean / max | finished (UTC) |", "| --- | ---: | --- | --- |"]
    lines += [f"| `{record['stage']}` | {record['seconds']:,.1f} | {_load(record)} | {record['finished']} |"
              for record in records]
    total = RunTotal.of(records)
    if total is not None:
        lines.append(f"| **all {total.runs} stage runs** | **{total.seconds:,.1f}** | {total.bounds} of them upper "
                     f"bounds | on {total.cores} cores |")
    return "\n".join(lines) + "\n"


# a stage's own workers fill the cores; DVC, the load sampler and a shell add a few hundredths (a stage
# of two workers with nothing else running averaged 2.05 on 2 cores at c4eaf0f): a quarter of a core
# more is other work
LOAD_MARGIN = 0.25


def _idle(record: dict) -> bool:
    """Whether a stage ran on otherwise idle cores: its mean sampled load at most a quarter of a core above
    the cores, which its own workers fill. A time logged without its load is not known to be idle."""
    return "load" in record and record["load"]["mean"] <= record["cores"] + LOAD_MARGIN


def _load(record: dict) -> str:
    if "load" not in record:
        return "not recorded: an upper bound"
    load = record["load"]
    shown = f"{load['start']:.2f} / {load['mean']:.2f} / {load['max']:.2f}"
    return shown if _idle(record) else f"{shown}, loaded: an upper bound"


@dataclass(frozen=True)
class RunTotal:
    """The committed run's stage times summed, and when its last stage finished."""
    runs: int
    seconds: float
    bounds: int  # how many of the stage times are upper bounds (loaded cores)
    cores: str
    finished: str  # the last stage's finishing time, UTC

    @staticmethod
    def of(records: list[dict]) -> RunTotal | None:
        if not records:
            return None
        return RunTotal(len(records), sum(record["seconds"] for record in records),
                        sum(not _idle(record) for record in records),
                        ", ".join(map(str, sorted({record.get("cores") for record in records}, key=str))),
                        max(record["finished"] for record in records))


TARGET_SECONDS = 3600  # the project's target for the default run's stage time on our 2 idle cores (an hour)


def flippable(root: Path) -> str:
    """The README's list of the criteria a change of machine can flip: REPORT's, from the same claims.json."""
    found = machine_flippable(read_json(root / artifact("claims"))["claims"])
    return (f"{len(found)} criteria: {'; '.join(found)}.\n" if found else "none.\n")


def run_story(records: list[dict]) -> str:
    """The README's account of the committed run, from its records alone: how many stage runs, their total
    against the target (a difference, said as one), how many times are upper bounds, when it finished."""
    total = RunTotal.of(records)
    if total is None:
        return "No run is recorded in `docs/stage_times.yaml` yet.\n"
    loaded = [record["stage"] for record in records if not _idle(record)]
    load = ("every stage on otherwise idle cores (each mean load within a quarter of a core of the cores its own "
            "workers fill)" if not loaded else
            f"{len(loaded)} of its stage times on loaded cores, upper bounds ({', '.join(f'`{s}`' for s in loaded)})")
    gap = total.seconds - TARGET_SECONDS
    return (f"The committed run, as `docs/stage_times.yaml` records it (each stage's own log, its machine in the "
            f"file's header): {total.runs} stage runs on {total.cores} cores, its last stage finished "
            f"{total.finished} (UTC); {load}. Their stage times add up to {total.seconds:,.0f} s "
            f"({duration(total.seconds)}), {abs(gap):,.0f} s {'over' if gap > 0 else 'under'} the project's target "
            f"of {TARGET_SECONDS:,} s of stage time.\n")


def _cost_row(measurement: Measurement) -> str:
    return (f"| `{measurement.command}` | {duration(measurement.seconds)} | at {measurement.commit}, "
            f"{measurement.date}, {measurement.machine}; load: {measurement.load}; {measurement.note} |")


def cost_table(records: list[dict], measured: list[Measurement]) -> str:
    """The README's first-screen cost of each command: the default run's stage times (their total, the run's
    finishing day and how many of them are upper bounds), then every docs/measured.yaml entry."""
    lines = ["| command | wall clock | measured |", "| --- | --- | --- |"]
    total = RunTotal.of(records)
    if total is not None:
        bound = "an upper bound" if total.bounds else "idle cores"
        lines.append(f"| `dvc repro -f`, the default run | {duration(total.seconds)} of stage time "
                     f"({total.seconds:,.0f} s; {total.bounds} of {total.runs} stage times on loaded cores: "
                     f"{bound}) | finished {total.finished[:10]}, {total.cores} cores; per stage: "
                     f"[`docs/REVIEWING.md`](docs/REVIEWING.md#expected-time-of-each-experiment) |")
    return "\n".join(lines + [_cost_row(m) for m in measured]) + "\n"


def blocks(text: str) -> dict[str, str]:
    """The generated blocks of the guide, by name."""
    return {match["name"]: match["body"] for match in BLOCK.finditer(text)}


def rewrite(text: str, generated: dict[str, str]) -> str:
    """`text` with each named block's body replaced; a block not named keeps its body."""
    return BLOCK.sub(lambda m: m[1] + generated.get(m["name"], m["body"]) + m[4], text)


def generated(root: Path) -> dict[Path, dict[str, str]]:
    """Every generated block that must match the committed files, by document and name."""
    records = read_stage_times(root)
    costs = cost_table(records, load_measured((root / MEASURED).read_text()))
    return {GUIDE: {"claim-map": claim_map(), "verdicts": verdicts_table(root),
                    "stage-times": stage_times_table(records)},
            README: {"costs": costs, "results": results_table(root), "real-accuracy": real_accuracy(root),
                     "claim-code": claim_code(), "run-time": run_story(records),
                     "machine-flippable": flippable(root)}}


def record_run(root: Path) -> None:
    """STAGE_TIMES from this machine's logs: each stage's last run, after a whole run of the pipeline."""
    records = logged_runs(root)
    if not records:
        raise SystemExit(f"error: no stage run logged in {TIMINGS}: run the pipeline on this machine first")
    missing = sorted({r["stage"] for r in read_stage_times(root)} - {r["stage"] for r in records})
    if missing:  # a partial rerun must not replace the committed run's record with less than it held
        raise SystemExit(f"error: {TIMINGS} logs no run of {len(missing)} stages the recorded run has "
                         f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}): run the whole "
                         f"pipeline first; {STAGE_TIMES} is unchanged")
    kept = ("stage", "seconds", "finished", "cores", "load")
    text = (root / STAGE_TIMES).read_text() if (root / STAGE_TIMES).is_file() else ""
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    (root / STAGE_TIMES).write_text(header + yaml.safe_dump([{key: record[key] for key in kept if key in record}
                                                              for record in records], sort_keys=False, width=110))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if a generated block is stale or CITATION.cff does not match the project")
    parser.add_argument("--record-run", action="store_true",
                        help=f"first record {STAGE_TIMES} from this machine's stage logs (after a whole run)")
    args = parser.parse_args(argv)
    if args.record_run:
        record_run(ROOT)
    documents = generated(ROOT)
    if args.check:
        problems = [f"{document}: the {name} block is stale; run `python -m vitheory.reviewing`"
                    for document, bodies in documents.items()
                    for name, body in bodies.items() if blocks((ROOT / document).read_text()).get(name) != body]
        problems += citation_problems((ROOT / CITATION).read_text(), (ROOT / "pyproject.toml").read_text())
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    for document, bodies in documents.items():
        (ROOT / document).write_text(rewrite((ROOT / document).read_text(), bodies))
    return 0


if __name__ == "__main__":
    sys.exit(main())
