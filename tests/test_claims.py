import json

import pytest

from vitheory.claims import CLAIMS, Criterion, evaluate
from vitheory.errors import ArtifactError

LI3 = next(claim for claim in CLAIMS if claim.id == "LI-3")


def write_metrics(reports, initial, final):
    folder = reports / "metrics"
    folder.mkdir(parents=True, exist_ok=True)
    test = {"attn_all_query": 0.5, "error_rate": 0.0, "loss": 0.0}
    (folder / "li_vit.json").write_text(json.dumps({
        "initial": {"test": test | {"attn_relevant_query": initial}},
        "final": {"test": test | {"attn_relevant_query": final}},
        "reference": {"uniform": 0.2, "all_query_cap": 0.9},
    }))


@pytest.mark.parametrize("initial,final,holds", [
    (0.22, 0.95, True),
    (0.22, 0.89, False),   # not concentrated enough
    (0.32, 0.95, False),   # less than 3x its initial value
    (0.31, 0.95, False),   # started far from uniform (0.31 / 0.2 > 1.5)
    (0.30, 0.90, True),    # exactly on every threshold
])
def test_li3_verdict_follows_the_numbers(tmp_path, initial, final, holds):
    write_metrics(tmp_path, initial, final)
    record = evaluate(LI3, tmp_path)
    assert record["holds"] is holds
    assert record["measured"]["final"] == final
    assert record["measured"]["final_over_initial"] == pytest.approx(final / initial)
    assert record["threshold"] == {"final": ">= 0.9", "final_over_initial": ">= 3",
                                   "initial_over_uniform": "<= 1.5"}


def test_missing_metrics_name_the_stage(tmp_path):
    with pytest.raises(ArtifactError, match=r"li_vit\.json: missing; run `dvc repro train_li_vit`"):
        evaluate(LI3, tmp_path)


def test_criterion_operators():
    assert Criterion("x", ">=", 1.0).holds({"x": 1.0})
    assert not Criterion("x", ">", 1.0).holds({"x": 1.0})
    assert not Criterion("x", "<=", 1.0).holds({"x": 1.5})
    assert not Criterion("x", "<=", 1.0).holds({"x": None})  # not measured: never holds
    assert str(Criterion("x", "<=", 1.5)) == "x <= 1.5"
