"""REPORT.md: the provenance line (the git commit the run used, and what differed from it) and the verdict table."""

import json
import os
import subprocess
from pathlib import Path

from conftest import ROOT

from vitheory.report import source_revision


def _git(*args, cwd):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)


def test_source_revision_names_the_commit_and_uncommitted_code(tmp_path):
    assert source_revision(tmp_path) == "unknown (not a git checkout)"
    _git("init", "-q", cwd=tmp_path)
    (tmp_path / "vitheory").mkdir()
    (tmp_path / "vitheory" / "model.py").write_text("A = 1\n")
    (tmp_path / "notes.txt").write_text("not code\n")
    _git("add", "-A", cwd=tmp_path)
    _git("commit", "-qm", "code", cwd=tmp_path)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    (tmp_path / "notes.txt").write_text("edited, but not a source of results\n")
    assert source_revision(tmp_path) == f"`{head}`"
    (tmp_path / "vitheory" / "model.py").write_text("A = 2\n")
    (tmp_path / "params.yaml").write_text("lr: 1\n")
    assert source_revision(tmp_path) == f"`{head}`, with uncommitted changes to params.yaml, vitheory/model.py"


def test_the_verdict_table_names_each_claims_regime():
    from vitheory.params import load_params
    from vitheory.report import claims_table, regime_label

    params = load_params()
    assert regime_label(params) == f"cluttered digits, 8 x 8 ViT tokens, {params.real.seeds} seeds"  # the default regime
    record = {"paper": "PK22", "id": "PK-1", "verdict": "holds", "variants": {}, "measured": {"x": 1.0},
              "criteria": {"x > 0": {"quantity": "x", "interval": (0.5, 1.5), "threshold": "> 0",
                                     "source": "paper: the sign", "origin": "paper", "margin": 1.0}}}
    table = claims_table([record], {"PK-1": regime_label(params)})
    assert table[0].split(" | ")[7] == "regime"
    assert table[2].split(" | ")[7] == regime_label(params)


def _check(margin, interval, quantity="x"):
    return {"quantity": quantity, "interval": interval, "threshold": "> 0", "source": "paper: the sign", "origin": "paper", "margin": margin}


def test_a_criterion_is_marked_when_a_move_within_verifys_tolerance_can_flip_it():
    """Moved by its half-width (what verify --against accepts between machines), an interval crosses the
    threshold when |margin| < its width; a margin with a half-width to spare is left unmarked."""
    from vitheory.report import SPREAD_MARK, claims_table, within_spread

    assert not within_spread(_check(1.2, (0.7, 1.7)))  # holds, 0.7 above 0: more than h = 0.5 to spare
    assert within_spread(_check(0.8, (0.3, 1.3)))  # holds, but a move of 0.5 takes the interval to -0.2
    assert within_spread(_check(-0.1, (-0.6, 0.4)))  # inconclusive
    assert not within_spread(_check(-2.0, (-2.5, -1.5)))  # does not hold, by 1.5 to spare
    assert not within_spread(_check(None, (None, None)))  # unmeasured: inconclusive on any machine
    record = {"paper": "PK22", "id": "PK-1", "verdict": "holds", "variants": {}, "measured": {"x": 0.8, "y": 1.2},
              "criteria": {"x > 0": _check(0.8, (0.3, 1.3)), "y > 0": _check(1.2, (0.7, 1.7), "y")}}
    margins = claims_table([record], {"PK-1": "synthetic"})[2].split(" | ")[5]
    assert margins == f"0.8{SPREAD_MARK}<br>1.2"


def test_the_provenance_names_the_cpu_and_its_core_count():
    from vitheory.report import cpu_description

    described = cpu_description()
    assert f", {os.cpu_count()} cores, " in described
    cpuinfo = Path("/proc/cpuinfo")
    fields = dict(line.split(":", 1) for line in cpuinfo.read_text().splitlines()[::-1] if ":" in line) \
        if cpuinfo.is_file() else {}
    fields = {key.strip(): value.strip() for key, value in fields.items()}  # the first CPU's, read last
    if "vendor_id" in fields:  # x86 Linux: vendor, model, and the AVX flags the kernels follow
        assert described.startswith(f"{fields['vendor_id']} {fields['model name']}, ")
        assert ("avx2" in described.split("flags")[1]) == ("avx2" in fields["flags"].split())


def test_every_claims_regime_is_said_from_the_default_and_the_quick_params(default_params, quick_params):
    """The report states each claim's regime from the run's params (report.py calls `claim.regime` for every
    claim): a regime text that breaks stops the report stage, which only the end-to-end tests would see
    (13 such mutants of li23/claims.py survived, docs/MUTATION.md)."""
    from vitheory.papers import PAPERS

    for params in (default_params, quick_params):
        for claim in (claim for paper in PAPERS for claim in paper.claims):
            said = claim.regime(params)
            assert isinstance(said, str) and len(said) > 20, f"{claim.id}: {said!r}"


def _toy_paper(regimes: dict, seeds: int = 6):
    """Two claims through the real claim code: a synthetic one with a mean, a paired direction, a setting and
    a condition, and a real-image one; `regimes` gives each claim's regime sentence."""
    from vitheory.core.claims import REAL, SYNTHETIC, Claim, Criterion, Paper
    from vitheory.core.intervals import MEAN, PAIRED, SETTINGS_GROUP

    units = {"seeds": [{"gain": 0.1 + 0.01 * s, "drop": 0.2 - 0.03 * (s % 3), "fit": 1.0} for s in range(seeds)],
             SETTINGS_GROUP: [{"scale": 2.0}]}

    def means(samples):
        scale = samples[SETTINGS_GROUP][0]["scale"] if SETTINGS_GROUP in samples else 1.0
        return {q: scale * sum(seed[q] for seed in samples["seeds"]) / len(samples["seeds"])
                for q in ("gain", "drop", "fit")}

    def claim(claim_id, data, criteria, conditions=()):
        return Claim(id=claim_id, statement=f"{claim_id} says so.", metric="means over seeds", criteria=criteria,
                     evidence=(), samples=lambda root: units, statistics=means, regime=regimes[claim_id], data=data,
                     conditions=conditions)

    return Paper(key="TOY", citation="A toy paper.", claims=(
        claim("SYN-1", SYNTHETIC, (Criterion("gain", ">", 0.0, "paper: the sign", MEAN),
                                   Criterion("drop", ">", 0.0, "ours: a paired one", PAIRED, group="seeds")),
              (Criterion("fit", ">=", 1.0, "ours: a condition", MEAN),)),
        claim("REAL-1", REAL, (Criterion("drop", ">", 0.5, "ours: a margin", PAIRED, group="seeds"),))))


def _report(monkeypatch, paper, params):
    """claims.json's records and REPORT.md's text of `paper` alone, through the report's own code."""
    from vitheory import report

    monkeypatch.setattr(report, "PAPERS", (paper,))
    records = report.evaluate_all(ROOT, params)
    text = report.render_report(records, params, (ROOT / "params.yaml").read_text(), {"train": "cpu"}, "`rev`")
    return json.dumps(records, indent=1), text


def test_a_reworded_label_or_regime_sentence_leaves_the_report_as_it_was(monkeypatch, default_params):
    """The report reads a check's quantity from the check and a claim's data from its field, never from
    their words: every label reworded (its quantity no longer first) and the regime sentences swapped (the
    real-image claim's no longer names the dataset, the synthetic one's does) change claims.json and
    REPORT.md in those words alone, the regime column and every value the same."""
    from vitheory.core.claims import Criterion
    from vitheory.images.params import dataset_named

    dataset = dataset_named(default_params.images)
    said = {"SYN-1": lambda params: "Synthetic tokens of the toy data model.",
            "REAL-1": lambda params: f"Dataset {dataset}, with the toy recipe."}
    reworded = {"SYN-1": lambda params: f"Toy tokens, unlike {dataset}.",
                "REAL-1": lambda params: "The run's real images, with the toy recipe."}
    records, text = _report(monkeypatch, _toy_paper(said), default_params)
    monkeypatch.setattr(Criterion, "__str__", lambda c: f"{c.op} {c.threshold:g}, measured as {c.quantity}")
    paper = _toy_paper(reworded)
    new_records, new_text = _report(monkeypatch, paper, default_params)
    assert new_text != text and "measured as gain" in new_text
    for claim in paper.claims:
        for c in (*claim.criteria, *claim.conditions):
            label = f"{c.quantity} {c.op} {c.threshold:g}"
            new_records = new_records.replace(str(c), label)
            new_text = new_text.replace(str(c), label)
        new_text = new_text.replace(reworded[claim.id](default_params), said[claim.id](default_params))
    assert new_records == records
    assert new_text == text


def test_a_claims_data_is_what_its_regime_says_under_the_default_and_the_quick_params(default_params, quick_params):
    """A claim on real images names the run's dataset in its regime, a synthetic one does not: the field
    the report reads agrees with the sentence it shows."""
    from vitheory.core.claims import REAL
    from vitheory.images.params import dataset_named
    from vitheory.papers import PAPERS

    for params in (default_params, quick_params):
        for claim in (claim for paper in PAPERS for claim in paper.claims):
            assert (claim.data == REAL) == (dataset_named(params.images) in claim.regime(params)), claim.id


def test_the_report_says_a_paired_direction_is_decided_by_its_sign_flip_test_and_whether_it_was_exact(
        monkeypatch, default_params):
    """REPORT.md's opening names every kind's method, what it is for, and that a paired direction's
    sign-flip p-values decide, not its interval; each paired row says so beside its p-values, and names
    the test exact up to 16 seeds and drawn from 65,536 random sign patterns above."""
    from vitheory.core.intervals import METHODS

    regimes = {"SYN-1": lambda params: "Synthetic tokens.", "REAL-1": lambda params: "Real images."}
    for seeds, method in ((16, "exact sign-flip"), (17, "sign-flip, 65,536 random sign patterns")):
        records, text = _report(monkeypatch, _toy_paper(regimes, seeds), default_params)
        opening = text.split("\n")[2]
        assert ("a paired direction (measured within each seed) is decided instead by its sign-flip p-values, "
                "one-sided each way at 2.5%, not by the interval shown beside them") in opening
        assert all(f"{m.name}: {m.description}" in opening for m in METHODS.values())
        assert ("the test is exact, over all 2^n sign patterns, up to 16 seeds, and above 16 estimates its "
                "p-values from 65,536 random sign patterns") in opening
        paired = [line for line in text.split("\n") if line.startswith("| this run | drop > ")]
        assert len(paired) == 2 and all(f"| {method}; p (greater) " in line for line in paired)
        assert all(": these decide, not the interval (Student-t's) |" in line for line in paired)
        assert [check["method"] for record in json.loads(records) for check in record["criteria"].values()
                if check["kind"] == "paired"] == [method, method]


def test_a_power_line_says_how_it_was_planned_and_when_no_affordable_count_decides():
    from vitheory.report import power_line

    def check(needed, **plan):
        return {"verdict": "inconclusive", "seeds_needed": needed,
                "plan": {"by": "resampling the units", "power": None, "monte_carlo_error": None, "runs": None,
                         "searched_up_to": None} | plan}

    planned = power_line("x > 0", check(49, power=0.81, monte_carlo_error=0.02, runs=400, searched_up_to=1000))
    assert planned == ("`x > 0`: about 49 seeds per group would decide it (resampling the units: power 0.81, Monte "
                       "Carlo standard error 0.02 over 400 runs)")
    beyond = power_line("x > 0", check(None, runs=400, searched_up_to=1000))
    assert "no count up to 1,000 seeds per group decides it at power 0.8" in beyond
    assert "can be planned" in power_line("x > 0", check(None))
    assert power_line("x > 0", {"verdict": "holds"}) is None


def test_the_method_column_states_a_failed_assumption():
    from vitheory.report import method_text

    check = {"method": "Student-t", "kind": "mean", "coverage": 0.95,
             "assumption": "approximate: units skewed (a: skewness 2.0), coverage about 89% at 6 seeds"}
    assert method_text(check) == "Student-t; " + check["assumption"]
    assert method_text(check | {"assumption": None}) == "Student-t"
