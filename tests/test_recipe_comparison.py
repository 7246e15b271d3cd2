"""The recipe comparison (benchmarks/recipe_comparison.py): a candidate is adopted only if every claim keeps
its verdict and every deciding number lies inside the committed run's interval. Two planted runs of JSL-5
and JSL-6 (train_real's tables, as the verdict tables write them)."""

import importlib.util
from pathlib import Path

from verdict_tables import SETTINGS

from benchmarks.recipe_comparison import compare, reasons_to_keep, table
from vitheory.jsl22.claims import PAPER

# JSL-5's and JSL-6's planted runs, from [JSL22]'s verdict table (each paper's table module has the same name)
_spec = importlib.util.spec_from_file_location("jsl22_verdict_table",
                                               Path(__file__).parent / "jsl22" / "test_verdict_table.py")
_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_table)
_real = _table._real

CLAIMS = [claim for claim in PAPER.claims if claim.id in ("JSL-5", "JSL-6")]


def _runs(tmp_path, **candidate):
    committed, other = tmp_path / "committed", tmp_path / "candidate"
    _real()(committed)
    _real(**candidate)(other)
    return compare(CLAIMS, committed, other, SETTINGS)


def test_the_same_run_twice_is_adopted(tmp_path):
    rows, verdicts = _runs(tmp_path)
    assert reasons_to_keep(rows, verdicts) == [] and all(row.inside for row in rows)
    assert all(before == after for before, after in verdicts.values())


def test_a_moved_verdict_and_a_number_outside_its_interval_keep_the_committed_recipe(tmp_path):
    """The candidate's positional ViT 10 points below the vanilla one: JSL-6 fails, and its deciding number
    lies far outside the committed interval; JSL-5's numbers stay inside."""
    rows, verdicts = _runs(tmp_path, vit_positional_natural=0.80)
    reasons = reasons_to_keep(rows, verdicts)
    assert verdicts["JSL-6"] == ("holds", "does not hold") and verdicts["JSL-5"] == ("holds", "holds")
    assert reasons[0] == "JSL-6: holds -> does not hold"
    assert any(r.startswith("JSL-6 `positional_minus_vanilla >= -0.03`: ") and " outside [" in r for r in reasons)
    assert not any(r.startswith("JSL-5") for r in reasons)


def test_a_number_outside_its_interval_alone_keeps_the_committed_recipe(tmp_path):
    """A smaller structure score, still above its null: the verdict holds, the number left its interval."""
    rows, verdicts = _runs(tmp_path, permuted_structure=0.2)
    assert verdicts["JSL-5"] == ("holds", "holds")
    assert [r.split(":")[0] for r in reasons_to_keep(rows, verdicts)] == ["JSL-5 `permuted_structure_over_null > 0`"]
    assert "| JSL-5 | `permuted_structure_over_null > 0` |" in table(rows, verdicts)
