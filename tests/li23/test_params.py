"""[LI23]'s params rules that read token counts: two values of one grid that give the same count are the
same data twice (issue 66: the wide grid's alpha* 0.1 and 0.125, both 2 tokens of 20)."""

import copy

import pytest
import yaml
from conftest import ROOT

from vitheory.li23.params import ATLAS_ALPHA_STAR
from vitheory.params import ParamsError, parse_params
from vitheory.preset import merge

RAW = yaml.safe_load((ROOT / "params.yaml").read_text())
PRESETS = sorted(path.stem for path in (ROOT / "presets").glob("*.yaml"))


def _set(raw, path, value):
    node = raw
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return raw


# (where, values, the pair and count the error must name, the values less the repeated count); at 20 tokens
# for the phase grids, 40 for the rest
SHARED_COUNTS = [
    (("phase", "grids", "wide", "alpha_star"), [0.1, 0.125, 0.15], "0.1 and 0.125 both give 2 relevant tokens of 20",
     [0.1, 0.15]),
    (("phase", "grids", "default", "alpha_star"), [0.1, 0.15, 0.16], "0.15 and 0.16 both give 3 relevant tokens of 20",
     [0.1, 0.15, 0.2]),
    (("sparsify", "keep_ratio"), [0.5, 0.25, 0.5], "0.5 and 0.5 both give 20 kept tokens of 40", [0.5, 0.25]),
    (("atlas", "knobs", ATLAS_ALPHA_STAR), [0.1, 0.11], "0.1 and 0.11 both give 4 relevant tokens of 40", [0.1, 0.15]),
    (("atlas", "knobs", ATLAS_ALPHA_STAR), [0.1, 0.21], "0.2 and 0.21 both give 8 relevant tokens of 40",  # the default's
     [0.1, 0.2]),
]


@pytest.mark.parametrize("where,values,named,distinct", SHARED_COUNTS)
def test_grid_values_of_one_token_count_are_refused_in_one_line_naming_the_key(where, values, named, distinct):
    with pytest.raises(ParamsError) as err:
        parse_params(_set(copy.deepcopy(RAW), where, values))
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{'.'.join(where)} = {values!r} is not allowed")
    assert named in message and "drop one or move it to a value of another count" in message


@pytest.mark.parametrize("where,values,named,distinct", SHARED_COUNTS)
def test_the_same_grid_with_every_count_once_is_allowed(where, values, named, distinct):
    parse_params(_set(copy.deepcopy(RAW), where, distinct))


@pytest.mark.parametrize("preset", PRESETS)
def test_params_yaml_and_every_preset_give_each_phase_grid_distinct_token_counts(preset):
    """Counted here, not through the rule: fails on the wide grid before issue 66 even without it."""
    params = parse_params(merge(RAW, yaml.safe_load((ROOT / f"presets/{preset}.yaml").read_text())))
    for name in ("default", "wide"):
        alphas = getattr(params.phase.grids, name).alpha_star
        counts = [round(alpha * params.phase.data.n_tokens) for alpha in alphas]
        assert len(set(counts)) == len(counts), f"{preset}: phase.grids.{name}.alpha_star {list(alphas)} gives {counts}"
