"""claims.json and REPORT.md: every paper's claims evaluated, the claims table, one section per paper
with its figures and each claim's regime, and the provenance."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import yaml

from vitheory import CPU_NUMERICS
from vitheory.core.artifacts import read_json
from vitheory.core.claims import AFFORDABLE_SEEDS, FAILS, HOLDS, INCONCLUSIVE, POWER, REAL, evaluate, labelled_checks
from vitheory.core.config import ParamsView, as_dict
from vitheory.core.intervals import MEDIAN, METHODS, SETTINGS_GROUP, SHARE
from vitheory.core.paths import artifact, outputs, stages
from vitheory.papers import PAPERS
from vitheory.preset import which_preset

SOURCES = ("vitheory", "stages", "dvc.yaml", "params.yaml")  # what decides the results
PACKAGES = ("torch", "numpy", "safetensors", "dvc", "dvclive", "pandas", "matplotlib", "seaborn")


def params_digest(params: ParamsView) -> str:
    """sha256 of the validated params (canonical JSON): equal digests, equal settings."""
    canonical = json.dumps(as_dict(params), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def interval_text(interval: list[float | None]) -> str:
    low, high = interval
    return "[n/a]" if low is None else f"[{fmt(low)}, {fmt(high)}]"


def _source(check: dict[str, Any]) -> str:
    """`paper` or `ours`, as the criterion declares."""
    return check["origin"]


def _units(check: dict[str, Any]) -> str:
    return ", ".join(f"{group} {n}" for group, n in check["units"].items()) or "none (no spread)"


def method_text(check: dict[str, Any]) -> str:
    """The interval's method, its coverage where it is not the nominal one, a paired test's p-values, which
    decide in place of the interval, and where the units fail the method's assumption, by how much."""
    said = check["method"]
    if check["kind"] in (SHARE, MEDIAN) and check["coverage"] is not None:
        said += f", {'at least ' if check['kind'] == SHARE else ''}{check['coverage']:.2%} coverage"
    if "p_values" in check:
        p = check["p_values"]
        said += (f"; p (greater) {fmt(p['greater'])}, p (smaller) {fmt(p['smaller'])}: these decide, not the "
                 "interval (Student-t's)")
    if check.get("assumption"):
        said += f"; {check['assumption']}"
    return said


def power_line(criterion: str, check: dict[str, Any]) -> str | None:
    """For a criterion that decides nothing: the seeds its own test would need at power POWER, and how that was
    found (runs drawn from this run's units, each decided by the criterion's method, with the power's Monte
    Carlo error)."""
    if check["verdict"] != INCONCLUSIVE:
        return None
    needed, plan = check.get("seeds_needed"), check.get("plan") or {}
    if needed is None and plan.get("searched_up_to"):
        return (f"`{criterion}`: no count up to {plan['searched_up_to']:,} seeds per group decides it at power {POWER} "
                f"({plan['by']}): the measured effect is too small against its spread")
    if needed is None:
        return (f"`{criterion}`: no number of seeds can be planned from this run (its value sits on the threshold, "
                "as a step statistic's can, or it has no spread, or it could not be measured)")
    # a record made before plans were kept (issue 53) has the count alone
    how = "" if not plan else (f"{plan['by']}: power {plan['power']:.2f}" + ("" if not plan["monte_carlo_error"] else
                               f", Monte Carlo standard error {plan['monte_carlo_error']:.2f} over {plan['runs']} runs"))
    if needed > AFFORDABLE_SEEDS:
        return (f"`{criterion}`: more than {AFFORDABLE_SEEDS:,} seeds per group: the measured effect is too small "
                f"against its spread to decide at any affordable count (about {needed:,}{'; ' + how if how else ''})")
    return f"`{criterion}`: about {needed} seeds per group would decide it{f' ({how})' if how else ''}"


def within_spread(check: dict[str, Any]) -> bool:
    """Whether a change of machine can flip this criterion's verdict. Trainings are chaotic: on another CPU
    a number moves like a fresh draw of seed noise (a rerun on another CPU: JSL-6 +0.0084 -> +0.0081, PK-8 -0.014 ->
    +0.092), and `verify --against` accepts a move up to the interval's half-width h. Moved by h, the
    interval (value +- h) crosses the threshold when |margin| < 2h: every inconclusive criterion, and a
    verdict that holds or fails by less than one half-width to spare (ours: verify's tolerance)."""
    low, high = check["interval"]
    if check["margin"] is None or low is None:
        return False  # unmeasured: inconclusive on any machine
    return abs(check["margin"]) < high - low


def _margin(check: dict[str, Any]) -> str:
    return fmt(check["margin"]) + (SPREAD_MARK if within_spread(check) else "")


SPREAD_MARK = " (±)"


def machine_flippable(records: list[dict[str, Any]]) -> list[str]:
    """`<claim> `<criterion>`` of every criterion a change of machine can flip (`within_spread`)."""
    return [f"{r['id']} `{criterion}`" for r in records for criterion, check in r["criteria"].items()
            if within_spread(check)]


def cpu_description() -> str:
    """The CPU this process runs on: vendor, model, core count, and the vector extensions that decide
    which kernels run (Linux's /proc/cpuinfo; elsewhere what `platform` knows)."""
    info: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
    flags = info.get("flags", "").split()
    vector = [flag for flag in ("avx2", "fma", "avx512f", "amx_tile") if flag in flags]
    return (f"{info.get('vendor_id', platform.machine())} {info.get('model name', platform.processor() or 'unknown model')}"
            f", {os.cpu_count()} cores, " + ("flags " + " ".join(vector) if info else "flags unknown"))


def regime_label(params: ParamsView) -> str:
    """The real-image regime in a few words, for the verdict table."""
    data, real = params.images, params.real
    side = {"digits": 8, "cluttered_digits": data.cluttered.canvas, "fashion_mnist": 28}.get(data.dataset)
    grid = f", {side // real.models.vit.patch} x {side // real.models.vit.patch} ViT tokens" if side else ""
    return f"{data.dataset.replace('_', ' ')}{grid}, {real.seeds} seeds"


def claims_table(records: list[dict[str, Any]], regimes: dict[str, str]) -> list[str]:
    """One row per claim: each criterion's measured value with its interval, threshold, the threshold's
    source (the paper's or ours) and margin, the verdict, the regime it was measured in (`regimes`, by
    claim), and the verdict under each other setting."""
    lines = ["| paper | claim | measured [interval] | threshold | source | margin | verdict | regime | other settings |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in records:
        checks = r["criteria"].items()
        measured = "<br>".join(f"{check['quantity']} = {fmt(r['measured'][check['quantity']])} "
                               f"{interval_text(check['interval'])}" for _, check in checks)
        threshold = "<br>".join(check["threshold"] for _, check in checks)
        source = "<br>".join(_source(check) for _, check in checks)
        margin = "<br>".join(_margin(check) for _, check in checks)
        others = "<br>".join(f"{name}: {variant['verdict']}" for name, variant in r["variants"].items())
        lines.append(f"| [{r['paper']}] | {r['id']} | {measured} | {threshold} | {source} | {margin} | "
                     f"**{r['verdict']}** | {regimes[r['id']]} | {others} |")
    return lines


def claim_section(record: dict[str, Any], regime: str, confidence: float, atlas: Sequence[str] = ()) -> list[str]:
    """A claim's section; `atlas`: where it holds along each knob of the atlas, when one was made."""
    lines = [f"### {record['id']}: **{record['verdict']}**", "", record["statement"], "",
             f"*Setting:* {regime}", ""]
    if atlas:
        lines += [f"*Where it holds* (the atlas, `{artifact('atlas_table')}`: one knob at a time from these "
                  "params; an inconclusive point is no flip):", "", *(f"- {line}" for line in atlas), ""]
    lines += [f"*Measured:* {record['metric']}. Independent units: "
              + ", ".join(f"{group} ({n})" for group, n in record["units"].items() if group != SETTINGS_GROUP)
              + f"; each criterion's {confidence:.0%} interval takes its standard error from the units that move it.",
              "", "| setting | criterion | value | interval | method | units (df) | margin | verdict |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for setting, judged in {"this run": record, **record["variants"]}.items():
        for label, check in labelled_checks(judged):
            df = "" if check["df"] is None else f" ({check['df']:.1f})"
            lines.append(f"| {setting} | {label} | {fmt(judged['measured'][check['quantity']])} | "
                         f"{interval_text(check['interval'])} | {method_text(check)} | {_units(check)}{df} | "
                         f"{_margin(check)} | {check['verdict']}"
                         + (f" ({check['reason']})" if "reason" in check else "") + " |")
        lines.append(f"| {setting} | **claim** | | | | | | **{judged['verdict']}** |")
    power = [line for label, check in labelled_checks(record) if (line := power_line(label, check))]
    if power:
        lines += ["", f"Seeds to decide (power {POWER}, runs drawn from this run's units, each decided by its method):",
                  ""] + [f"- {p}" for p in power]
    lines += ["", "Where each threshold comes from:", ""]
    lines += [f"- `{label}`: {check['source']}" for label, check in labelled_checks(record)]
    lines += ["", "| quantity | value |", "| --- | --- |"]
    lines += [f"| {quantity} | {fmt(value)} |" for quantity, value in record["measured"].items()]
    lines.append("")
    for path in record["evidence"]:
        lines.append(f"![{path}]({path})" if path.endswith(".png") else f"Data: [`{path}`]({path})")
        lines.append("")
    return lines


def source_revision(root: Path) -> str:
    """The git commit of the code and params a run used, naming what differed from it (or why none)."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)

    try:
        head = git("rev-parse", "HEAD")
    except OSError:
        return "unknown (git is not installed)"
    if head.returncode != 0:
        return "unknown (not a git checkout)"
    changed = git("status", "--porcelain", "--", *SOURCES).stdout.splitlines()
    paths = sorted(line[3:] for line in changed)
    return f"`{head.stdout.strip()}`" + (f", with uncommitted changes to {', '.join(paths)}" if paths else "")


def evaluate_all(root: Path, params: ParamsView) -> list[dict[str, Any]]:
    """The record of every claim of every paper, in the report's order."""
    return [evaluate(claim, paper.key, root, params.report) for paper in PAPERS for claim in paper.claims]


VERDICT_CODES = {HOLDS: "+", FAILS: "-", INCONCLUSIVE: "?"}


def verdicts(records: list[dict[str, Any]]) -> dict[str, str]:
    """Each claim's verdict, and each paper's verdicts in claim order as one code per claim (`+` holds,
    `-` does not hold, `?` inconclusive: `LI23: ?+?+-`), so that a 120-column `dvc exp show` holds every
    experiment's verdicts in three columns; a metrics file."""
    by_paper: dict[str, str] = {}
    for record in records:
        by_paper[record["paper"]] = by_paper.get(record["paper"], "") + VERDICT_CODES[record["verdict"]]
    return {record["id"]: record["verdict"] for record in records} | by_paper


def deciding_numbers(records: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Each claim's measured value of every quantity a criterion decides on, as a metrics file."""
    return {record["id"]: {check["quantity"]: record["measured"][check["quantity"]]
                           for check in record["criteria"].values()}
            for record in records}


def devices(root: Path) -> dict[str, str]:
    """The device each stage ran on, as its metrics record it (stages that train record one)."""
    found = {}
    for name, stage in stages().items():
        for path in outputs(stage):
            if path.endswith(".json") and (root / path).is_file():
                recorded = read_json(root / path)
                if isinstance(recorded, dict) and "device" in recorded:
                    found[name] = recorded["device"]
    return found


def render_report(records: list[dict[str, Any]], params: ParamsView, params_text: str,
                  devices: dict[str, str], revision: str, atlas: Mapping[str, Sequence[str]] | None = None) -> str:
    """The whole REPORT.md. `devices` maps each training stage to the device it ran on; `revision` is
    `source_revision`'s line; `atlas`, each claim's lines of where it holds (vitheory.grid.where_lines)."""
    counts = {verdict: sum(r["verdict"] == verdict for r in records) for verdict in (HOLDS, FAILS, INCONCLUSIVE)}
    lines = ["# vitheory report", "",
             "Generated by `dvc repro` (stage `report`); every verdict below is computed from the "
             "measured numbers, never written by hand. A criterion holds when its whole "
             f"{params.report.confidence:.0%} interval lies on the threshold's side, does not hold when it lies "
             "wholly on the other, and is inconclusive when it straddles the threshold; a paired direction "
             "(measured within each seed) is decided instead by its sign-flip p-values, one-sided each way at "
             f"{params.report.tail:.1%}, not by the interval shown beside them; a claim holds when all "
             f"its criteria do. Each criterion's interval is the one made for its kind of quantity (seeds are the "
             "units; what is measured inside a seed, its mini-batches or blocks, is averaged inside it): "
             + "; ".join(f"{method.name}: {method.description}" for method in METHODS.values())
             + ". Each threshold says whether it is the "
             "paper's (a theorem, figure or sentence, often only a direction) or ours (with the reason), in the "
             "source column and in each claim's section.", "",
             f"**Of {len(records)} claims, {counts[HOLDS]} hold, {counts[FAILS]} do not hold and "
             f"{counts[INCONCLUSIVE]} are inconclusive.**", ""]
    flips = [f"{r['id']} ({r['verdict']}; " + ", ".join(f"{name}: {v['verdict']}" for name, v in r["variants"].items())
             + ")" for r in records if any(v["verdict"] != r["verdict"] for v in r["variants"].values())]
    lines += [f"**Verdicts that change with the setting:** {'; '.join(flips) if flips else 'none'}. A claim's "
              "other settings (a wider grid, another score form, another dataset) are measured by the same "
              "pipeline run; its section gives their numbers.", ""]
    regimes = {claim.id: regime_label(params) if claim.data == REAL else f"synthetic, the [{paper.key}] data model"
               for paper in PAPERS for claim in paper.claims}
    lines += claims_table(records, regimes) + [""]
    fragile = machine_flippable(records)
    lines += [f"**Verdicts a change of machine can flip**, their margins marked{SPREAD_MARK}: "
              f"{'; '.join(fragile) if fragile else 'none'}. On another CPU the trainings take other paths and each "
              "number moves like a fresh draw of seed noise; `verify --against` accepts a move up to its "
              "interval's half-width, which carries these intervals across their thresholds (|margin| < the "
              "interval's width). Seed noise decides them; more seeds would settle them.", ""]
    by_id = {record["id"]: record for record in records}
    for paper in PAPERS:
        lines += [f"## [{paper.key}] {paper.citation}", ""]
        for claim in paper.claims:
            lines += claim_section(by_id[claim.id], claim.regime(params), params.report.confidence,
                                   (atlas or {}).get(claim.id, ()))
    versions = {"python": platform.python_version()} | {p: metadata.version(p) for p in PACKAGES}
    lines += ["## Provenance", "",
              f"- git commit: {revision}",
              "- every dependency (code, params, data) and output of every stage is hashed in `dvc.lock`; "
              "`python -m vitheory.verify` checks them and re-derives every claim from the raw artifacts",
              f"- params digest (sha256 of the validated params): `{params_digest(params)}`",
              f"- preset: {which_preset(yaml.safe_load(params_text))} (`presets/`; `python -m vitheory.preset <name>` "
              "applies one)",
              "- devices: " + ", ".join(f"{stage} on {device}" for stage, device in devices.items()),
              "- CPU numerics (pinned by `vitheory/__init__.py`; the README's reproducibility section): "
              + ", ".join(f"{name}={os.environ.get(name, 'unset')}" for name in CPU_NUMERICS)
              + f", {torch.get_num_threads()} intra-op threads",
              f"- CPU (of the `report` stage, which runs last in `dvc repro`): {cpu_description()}; the bytes "
              "are promised on this CPU model and core count only (the README's reproducibility section)",
              "- versions: " + ", ".join(f"{name} {version}" for name, version in versions.items()),
              "", "Params used (`params.yaml`):", "", "```yaml", params_text.rstrip(), "```", ""]
    return "\n".join(lines)
