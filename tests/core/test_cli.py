"""The stage wrapper's timing record: the wall clock with the load it ran under (issue 52)."""

import json
import time

from vitheory.core import cli


def test_the_load_is_sampled_while_a_stage_runs_and_logged_beside_its_time(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "LOAD_SAMPLE_SECONDS", 0.01)
    monkeypatch.setattr(cli, "TIMINGS", tmp_path)
    loads = iter(range(1, 1000))
    monkeypatch.setattr(cli.os, "getloadavg", lambda: (float(next(loads)), 0.0, 0.0))
    with cli.sampled_load() as samples:
        time.sleep(0.2)
    assert len(samples) >= 3 and samples == sorted(samples) and samples[0] == 1.0  # the start, then while it ran
    cli.log_timing("stage_script", "stage@run", 12.34, [1.0, 2.0, 6.0])
    record = json.loads((tmp_path / "stage_script.jsonl").read_text())
    assert record["seconds"] == 12.3 and record["stage"] == "stage@run"
    assert record["load"] == {"start": 1.0, "mean": 3.0, "max": 6.0}
