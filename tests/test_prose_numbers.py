"""Numbers in prose do not drift from the run's records (issue 54 item 2).

Every time quoted in README.md and docs/*.md, outside the generated blocks, is one of three things:
(a) a recorded value, formatted as the docs write it: a docs/measured.yaml entry's seconds, or a stage's
seconds or the total of docs/REVIEWING.md's generated stage-times table (read, never hard-coded here:
the table changes with every run); (b) a dated quote, a commit hash (7+ hex digits) in its sentence, or
for a table row or a code block, in its row or in the paragraph that introduces it (its caption); (c) one of
ALLOWED below, numbers that are not measurements of this repository's commands, each with its reason.
docs/HISTORY.md and docs/MUTATION.md are dated logs (every entry under its commit's heading) and are
not scanned.

Beside times: the decisive preset's seeds, the counts of claims by verdict and the bold verdicts that
describe the committed run, and verify's example output, each against the file it describes.
"""

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from vitheory import reviewing
from vitheory.core.artifacts import read_json
from vitheory.core.errors import ArtifactError
from vitheory.core.paths import artifact, outputs, stages
from vitheory.measured import MEASURED, duration, load_measured
from vitheory.verify import LockState, not_built_line, rebuild_seconds

ROOT = Path(__file__).resolve().parents[1]
DATED_LOGS = ("HISTORY.md", "MUTATION.md")
NUMBER = r"\d[\d,]*(?:\.\d+)?"
DURATION = re.compile(rf"(?<![\w.,-])(?:~|about )?{NUMBER}(?:-{NUMBER})?\s?(?:h|hours?|min|minutes?|s|seconds?)\b"
                      rf"(?:\s{NUMBER}\s?(?:min|s)\b)?")
COMMIT = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
FENCE = re.compile(r"^ *```.*?^ *```", re.S | re.M)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\[(`*])|\n(?= *(?:[-*] |\d+\. ))")
VERDICT = "(holds|does not hold|inconclusive)"


@dataclass(frozen=True)
class Allowed:
    """A quoted time that is no measurement of a command here: the file, a phrase that holds it or comes
    right before it, why."""
    document: str
    phrase: str
    reason: str


ALLOWED = [
    Allowed("README.md", "2-4 s of Python", "Python's start-up, which no stage log holds: said to explain the logs"),
    Allowed("REVIEWING.md", "2-4 s of Python", "Python's start-up, which no stage log holds: said to explain the logs"),
    Allowed("PERF.md", "every 10 s", "the load sampling's interval, a setting of vitheory.core.cli"),
    Allowed("PERF.md", "load average, 1 min", "the kernel's one-minute load average, a column's name"),
    Allowed("README.md", "3,600 s target", "issue 42's target, not a measurement"),
    Allowed("PERF.md", "above 3,600 s", "issue 42's target, not a measurement"),
    Allowed("README.md", "120-minute band", "issue 25's band, not a measurement"),
    Allowed("README.md", "more than 120 minutes", "issue 25's band, not a measurement"),
    Allowed("PERF.md", "Past 120 minutes", "issue 25's band, not a measurement"),
    Allowed("PRESETS.md", "TFLOP/s", "an estimate from FLOPs and a GPU's rate, not a measurement"),
    Allowed("README.md", "`dvc repro` (", "verify's example output: test_verify_example_is_what_verify_prints"),
]


def _documents() -> list[Path]:
    return [ROOT / "README.md"] + [path for path in sorted((ROOT / "docs").glob("*.md")) if path.name not in DATED_LOGS]


def _units(text: str) -> list[tuple[str, str]]:
    """(unit, what introduces it): sentences of prose (their introducer themselves), each row of a table
    and each code block (introduced by the paragraph before them, their caption); generated blocks out."""
    text = reviewing.BLOCK.sub("\n\n", text)
    text = FENCE.sub(lambda fence: fence[0].replace("\n\n", "\n"), text)  # one code block, one paragraph
    found, last = [], ""
    for paragraph in re.split(r"\n[ \t]*\n", text):
        if paragraph.lstrip().startswith(("|", "```")):
            found += [(row, last) for row in paragraph.splitlines()] if "|" in paragraph[:3] else [(paragraph, last)]
            continue
        found += [(sentence, sentence) for sentence in SENTENCE_END.split(paragraph)]
        last = paragraph
    return found


def _forms(seconds: float) -> set[str]:
    """How the docs write a recorded time."""
    minutes = round(seconds / 60)
    return {duration(seconds), f"{seconds:,.0f} s", f"{seconds:,.1f} s",
            f"~{minutes} min", f"about {minutes} minutes", f"{minutes} min"}


def recorded_forms(root: Path) -> set[str]:
    """Every written form of every recorded time: docs/measured.yaml's and the guide's stage times."""
    guide = (root / reviewing.GUIDE).read_text()
    seconds = [m.seconds for m in load_measured((root / MEASURED).read_text())]
    seconds += list(reviewing.logged_seconds(guide).values())
    total = reviewing.run_total(guide)
    seconds += [total.seconds] if total else []
    return {form for value in seconds for form in _forms(value)}


def drifted(document: str, text: str, recorded: set[str], allowed: list[Allowed]) -> list[str]:
    """Every time in `text` that is neither recorded, dated nor allowed, as `document: time: its sentence`."""
    problems = []
    for unit, introducer in _units(text):
        if COMMIT.search(unit) or COMMIT.search(introducer):
            continue
        flat = " ".join(unit.split())
        for time in (" ".join(found.split()) for found in DURATION.findall(unit)):
            if time in recorded or any(a.document == document and a.phrase in flat
                                       and (re.search(NUMBER, time)[0] in a.phrase or a.phrase + time in flat)
                                       for a in allowed):
                continue
            problems.append(f"{document}: {time!r} is not in {MEASURED} or the stage times, and its sentence "
                            f"names no commit: {flat[:160]}")
    return problems


def test_every_time_in_readme_and_docs_is_recorded_dated_or_allowed():
    recorded = recorded_forms(ROOT)
    problems = [problem for path in _documents() for problem in drifted(path.name, path.read_text(), recorded, ALLOWED)]
    assert not problems, "\n" + "\n".join(problems)


def test_a_drifted_time_is_flagged_and_a_recorded_or_dated_one_is_not():
    recorded = recorded_forms(ROOT)
    total = reviewing.run_total((ROOT / reviewing.GUIDE).read_text())
    text = (f"The run took {total.seconds + 3600:,.0f} s on 2 cores.\n\n"
            f"The run took {total.seconds:,.0f} s on 2 cores. At 53fe4aa it took 1 h 43 min.\n\n"
            "Measured at abc1234:\n\n| stage | time |\n| --- | --- |\n| x | 35 minutes |\n\n"
            "Undated:\n\n| stage | time |\n| --- | --- |\n| x | 35 minutes |\n")
    flagged = [problem.split(": ")[1].split(" is not")[0] for problem in drifted("X.md", text, recorded, [])]
    assert flagged == [f"'{total.seconds + 3600:,.0f} s'", "'35 minutes'"]
    allowed = [Allowed("X.md", "took 1 h", "a test")]
    assert drifted("X.md", text.replace("53fe4aa", "then"), recorded, allowed) == drifted("X.md", text, recorded, [])


def test_every_allowed_phrase_is_still_there():
    """An allow-list entry whose phrase left its document is stale: remove it."""
    texts = {path.name: " ".join(path.read_text().split()) for path in _documents()}
    assert [a for a in ALLOWED if a.phrase not in texts.get(a.document, "")] == []


def test_the_measured_costs_load_and_a_bad_entry_is_named(tmp_path):
    text = (ROOT / MEASURED).read_text()
    measured = load_measured(text)
    assert measured and all(m.machine and m.commit for m in measured)
    entries = yaml.safe_load(text)
    with pytest.raises(ArtifactError, match=r"entry 1 \(quick_preset\): commit 'HEAD' is not 7 to 40"):
        load_measured(yaml.safe_dump([dict(entries[0], commit="HEAD")]))
    with pytest.raises(ArtifactError, match=r"entry 2 \(tests\): missing \['machine'\]"):
        load_measured(yaml.safe_dump([entries[0], {k: v for k, v in entries[2].items() if k != "machine"}]))
    with pytest.raises(ArtifactError, match="seconds 'fast' is not a positive number"):
        load_measured(yaml.safe_dump([dict(entries[0], seconds="fast")]))
    with pytest.raises(ArtifactError, match="id quick_preset appears more than once"):
        load_measured(yaml.safe_dump([entries[0], entries[0]]))


def test_readme_first_screen_fits_25_lines_and_ends_with_the_costs():
    lines = (ROOT / "README.md").read_text().splitlines()
    end = lines.index("<!-- END costs -->")
    assert end + 1 <= 25, f"README's first screen (title to the cost table's end) is {end + 1} lines"
    assert sum(line.startswith("| `") for line in lines[:end]) == len(load_measured((ROOT / MEASURED).read_text())) + 1


def test_the_decisive_presets_seeds_are_quoted_as_the_preset_has_them():
    preset = (ROOT / "presets/decisive.yaml").read_text()
    seeds = {section: values["seeds"] for section, values in yaml.safe_load(preset).items()}
    asked = {int(n) for n in re.findall(r": (\d+)(?=;|$)", preset, re.M)} | set(seeds.values())
    quoted = {r"(\d+) control seeds": seeds["control"], r"(\d+) (?:real-image seeds|per real-image model)": seeds["real"]}
    problems = []
    for path in _documents():
        for sentence, _ in _units(path.read_text()):
            if "decisive" not in sentence:
                continue
            problems += [f"{path.name}: {n} {pattern} but presets/decisive.yaml has {want}: {sentence[:120]}"
                         for pattern, want in quoted.items() for n in re.findall(pattern, sentence) if int(n) != want]
            problems += [f"{path.name}: {n} seeds is no number presets/decisive.yaml asks: {sentence[:120]}"
                         for n in re.findall(r"(\d+) seeds", sentence) if int(n) not in asked]
    assert not problems, "\n" + "\n".join(problems)


def test_counts_and_bold_verdicts_of_the_committed_run_match_its_records():
    """`N of the run's M claims (IDs)` and `**ID verdict**` or `**ID old -> verdict.**`."""
    records = read_json(ROOT / artifact("claims"))["claims"]
    verdicts = {record["id"]: record["verdict"] for record in records}
    problems = []
    for path in _documents():
        text = reviewing.BLOCK.sub("", path.read_text())
        for count in re.finditer(rf"(\w+)[^.(]*? (\d+) of the run's (\d+) claims(?: \(([^)]*)\))?", text):
            kind = next(v for v in ("does not hold", "inconclusive", "holds") if v in count[0].lower())
            ids = sorted(claim for claim, verdict in verdicts.items() if verdict == kind)
            if (int(count[2]), int(count[3])) != (len(ids), len(verdicts)) or (count[4] and count[4].split(", ") != [
                    claim for claim in verdicts if claim in ids]):
                problems.append(f"{path.name}: {count[0]!r}, but reports/claims.json has {len(ids)} of "
                                f"{len(verdicts)} {kind}: {', '.join(ids)}")
        for bold in re.finditer(rf"\*\*([A-Z]+-\d+) (?:\w[\w ]* -> )?{VERDICT}\.?\*\*", text):
            if verdicts.get(bold[1]) != bold[2]:
                problems.append(f"{path.name}: {bold[0]} but reports/claims.json has {bold[1]} {verdicts.get(bold[1])}")
    assert not problems, "\n" + "\n".join(problems)


def _fresh_clone_state() -> LockState:
    """What verify finds in a fresh clone: every stage with a DVC-cached output (not in git) unbuilt."""
    pipeline = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]

    def cached(name: str) -> list[str]:
        base = pipeline[name.split("@")[0]]
        flags = [isinstance(out, str) or next(iter(out.values())).get("cache", True) for out in base.get("outs", [])]
        return [path for path, flag in zip(outputs(stages()[name]), flags) if flag]

    unbuilt = [name for name in stages() if cached(name)]
    return LockState(unbuilt=unbuilt, absent={Path(path) for name in unbuilt for path in cached(name)}, in_cache=False)


def test_verify_example_is_what_verify_prints():
    """README's example of a fresh clone's `not built` line, time included, is what verify prints from the
    guide's stage times (the checks it skips are the example's own: they depend on what is absent)."""
    example = next(line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("not built: "))
    skipped = re.search(r"\(([^)]*) unchecked\)", example)
    state = _fresh_clone_state()
    assert rebuild_seconds(ROOT, state.unbuilt) is not None
    assert example == not_built_line(ROOT, state, skipped[1].split(", ") if skipped else [])
