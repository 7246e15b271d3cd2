"""What every paper's claims owe the paper table (vitheory/papers.py): a claims module whose docstring
names all its claims, and statistics that produce every quantity their criteria and conditions decide
on, read from the committed artifacts (reports/ is in git) under every setting of the claim."""

import dataclasses
import inspect
import sys

import pytest
from conftest import ROOT

from vitheory.core.claims import Claim, Criterion, Paper
from vitheory.core.intervals import MEAN
from vitheory.papers import PAPERS

CLAIMS = [claim for paper in PAPERS for claim in paper.claims]


def _docstring_range(paper: Paper) -> str:
    """The first line of the paper's claims module, which must say `claims <first> to <last>:`."""
    module = sys.modules[paper.claims[0].statistics.__module__]
    assert all(sys.modules[c.statistics.__module__] is module for c in paper.claims), paper.key
    return (inspect.getdoc(module) or "").splitlines()[0]


@pytest.mark.parametrize("paper", PAPERS, ids=[paper.key for paper in PAPERS])
def test_each_claims_module_docstring_names_its_first_and_last_claim(paper):
    assert _docstring_range(paper).startswith(f"[{paper.key}] claims {paper.claims[0].id} to {paper.claims[-1].id}:")


def test_a_claim_added_after_the_docstring_range_is_caught():
    paper = PAPERS[-1]
    extra = dataclasses.replace(paper.claims[-1], id=f"{paper.claims[-1].id}0")
    longer = dataclasses.replace(paper, claims=(*paper.claims, extra))
    with pytest.raises(AssertionError):
        test_each_claims_module_docstring_names_its_first_and_last_claim(longer)


def unproduced(claim: Claim) -> dict[str, list[str]]:
    """Per setting (the claim's own, then each variant), the criteria's and conditions' quantities its
    statistics do not produce from the committed artifacts."""
    settings = {"": claim.samples} | {variant.name: variant.samples for variant in claim.variants}
    found = {}
    for name, samples in settings.items():
        measured = claim.statistics(samples(ROOT))
        found[name] = sorted(c.quantity for c in (*claim.criteria, *claim.conditions) if c.quantity not in measured)
    return {name: missing for name, missing in found.items() if missing}


@pytest.mark.parametrize("claim", CLAIMS, ids=[claim.id for claim in CLAIMS])
def test_every_criterion_and_condition_quantity_is_produced_by_its_statistics(claim):
    assert claim.criteria, f"{claim.id} has no criterion"
    assert unproduced(claim) == {}


def test_a_criterion_on_a_quantity_never_measured_is_caught():
    claim = next(c for c in CLAIMS if c.variants)
    unknown = Criterion("no_such_quantity", ">", 0.0, "ours: a quantity no statistics produce", MEAN)
    broken = dataclasses.replace(claim, conditions=(*claim.conditions, unknown))
    assert unproduced(broken) == {name: ["no_such_quantity"]
                                  for name in ("", *(variant.name for variant in claim.variants))}
