"""Every text that names a claim's deciding rule names the one `evaluate` applies (issue 53 item 9).

REPORT.md and claims.json are written from the claims themselves. What people write by hand is checked here:
README's "What is reproduced" table, whose threshold column names each criterion and condition as its
claim's label (`quantity op threshold`, as claims.json keys it) and whose source column says "paper:" or
"ours:" as the criteria's sources do; and PK-5's setting and metric, which name the noise that decides.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from vitheory.core.artifacts import write_table
from vitheory.core.claims import Claim
from vitheory.papers import PAPERS
from vitheory.pk22 import noise
from vitheory.pk22.tables import table_path

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = {claim.id: claim for paper in PAPERS for claim in paper.claims}
RULE = re.compile(r"`([a-z][a-z0-9_.]*) (>=|<=|>|<) (-?[0-9.e+-]+)`")
SECTION = "## What is reproduced"


def reproduced_rows(readme: str) -> dict[str, list[str]]:
    """README's "What is reproduced" table: claim id -> its cells (title, paper, measured, threshold, source,
    figures)."""
    section = readme.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if line.startswith("| ") and cells[0].split(" ")[0] in CLAIMS:
            rows[cells[0].split(" ")[0]] = cells
    return rows


def rule_mismatches(claim: Claim, cells: list[str]) -> list[str]:
    """What a row says that its claim does not decide on, and what its claim decides on that the row omits:
    the rules of the threshold column, and the threshold sources named in the source column."""
    named = {f"{quantity} {op} {float(threshold):g}" for quantity, op, threshold in RULE.findall(cells[3])}
    applied = {str(c) for c in (*claim.criteria, *claim.conditions)}
    found = [f"{claim.id}: README names `{rule}`, which no criterion or condition of it is" for rule in sorted(named - applied)]
    found += [f"{claim.id}: README omits `{rule}`" for rule in sorted(applied - named)]
    for label in ("paper: ", "ours: "):
        used = any(c.source.startswith(label) for c in (*claim.criteria, *claim.conditions))
        if used != (label.strip() in cells[4]):
            found.append(f"{claim.id}: README's source column {'omits' if used else 'says'} {label.rstrip(': ')!r}, "
                         f"its criteria's sources {'do' if used else 'do not'}")
    return found


def test_readmes_table_names_every_claim_once_and_the_rules_evaluate_applies():
    rows = reproduced_rows((ROOT / "README.md").read_text())
    assert sorted(rows) == sorted(CLAIMS), "README's 'What is reproduced' table must have one row per claim"
    assert [problem for claim_id, cells in rows.items() for problem in rule_mismatches(CLAIMS[claim_id], cells)] == []


@pytest.mark.parametrize("change,problem", [
    (lambda cells: cells[3].replace("`final >= 0.9`", "`final >= 0.95`"), "names `final >= 0.95`"),
    (lambda cells: cells[3].replace(", `initial_over_uniform <= 1.5`", ""), "omits `initial_over_uniform <= 1.5`"),
    (lambda cells: cells[3] + " `final_over_initial > 3`", "names `final_over_initial > 3`"),
])
def test_a_row_naming_another_threshold_or_missing_one_is_caught(change, problem):
    cells = reproduced_rows((ROOT / "README.md").read_text())["LI-3"]
    doctored = [*cells[:3], change(cells), *cells[4:]]
    assert any(problem in found for found in rule_mismatches(CLAIMS["LI-3"], doctored))


def test_a_source_column_calling_our_threshold_the_papers_is_caught():
    cells = reproduced_rows((ROOT / "README.md").read_text())["LI-3"]  # every threshold of LI-3 is ours
    assert rule_mismatches(CLAIMS["LI-3"], [*cells[:4], "paper: 0.9", cells[5]]) == [
        "LI-3: README's source column says 'paper', its criteria's sources do not",
        "LI-3: README's source column omits 'ours', its criteria's sources do"]


def test_pk5_says_which_noise_decides_the_one_its_verdict_reads(tmp_path, default_params):
    """Plant noise tables that differ by normalisation, see which one PK-5's samples read, and require its
    setting and metric to name that noise as the verdict's, the other as the variant's."""
    rows = [(model, seed, normalisation, f, 0.9, 0.01 * k) for k, normalisation in enumerate(noise.NORMALISATIONS)
            for model in ("vit", "cnn") for seed in range(2) for f in (0.0, 0.5, 1.0)]
    write_table(tmp_path / table_path("noise"), list(noise.COLUMNS), rows)
    claim = CLAIMS["PK-5"]
    drop = claim.samples(tmp_path)["vit"][0][1.0][1]
    deciding = next(name for k, name in enumerate(noise.NORMALISATIONS) if drop == pytest.approx(0.01 * k))
    variant = next(name for name in noise.NORMALISATIONS if name != deciding)
    assert claim.variants[0].samples(tmp_path)["vit"][0][1.0][1] != drop
    setting = claim.regime(default_params)
    assert f"The verdict's noise: {noise.NORMALISATIONS[deciding]}" in setting
    assert f"the variant's, reported beside: {noise.NORMALISATIONS[variant]}" in setting
    assert f"decided under {noise.NORMALISATIONS[deciding]}; beside it, under {noise.NORMALISATIONS[variant]}" in \
        claim.metric


def test_readme_quotes_the_decisive_presets_seeds_as_the_preset_has_them():
    """README names the decisive preset's seed counts in two sections: both must be the generated preset's."""
    preset = yaml.safe_load((ROOT / "presets/decisive.yaml").read_text())
    readme = (ROOT / "README.md").read_text()
    quoted = {"real": re.findall(r"(\d+) per real-image model", readme) + re.findall(r"\((\d+) real-image seeds", readme),
              "control": re.findall(r"(\d+) control seeds", readme)}
    assert all(quoted.values()), "README no longer quotes the decisive preset's seeds where this test looks"
    assert {family: {int(n) for n in counts} for family, counts in quoted.items()} == {
        family: {preset[family]["seeds"]} for family in quoted}
