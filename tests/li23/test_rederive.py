"""[LI23] re-derivation: LI-3's stored per-seed runs against the logged series."""

from vitheory.core.artifacts import write_json
from vitheory.core.history import History, write_histories
from vitheory.core.paths import artifact
from vitheory.li23 import rederive


def test_li_vit_runs_follow_the_logged_series(tmp_path):
    histories = [History(model="li_vit", seed=seed) for seed in (0, 1)]
    for history in histories:
        for step in (0, 5, 10):
            history.add(step, {"test": {"attn_relevant_query": 0.2 + step / 20 + history.seed / 100}})
    write_histories(tmp_path / artifact("li_vit_history"), histories)
    runs = [{"seed": h.seed, "initial": h.at_step(0), "final": h.at_step(10)} for h in histories]
    path = tmp_path / artifact("li_vit_metrics")
    write_json(path, {"device": "cpu", "steps": 10, "runs": runs, "reference": {"uniform": 0.2}})
    assert rederive.li_vit(tmp_path) == []
    runs[1]["final"]["test"]["attn_relevant_query"] += 0.01
    write_json(path, {"steps": 10, "runs": runs})
    [problem] = rederive.li_vit(tmp_path)
    assert problem.path == artifact("li_vit_metrics")
    assert f"initial/final values differ from {artifact('li_vit_history')}" in problem.text
