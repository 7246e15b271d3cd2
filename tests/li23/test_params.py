"""[LI23]'s params rules that read token counts: two values of one grid that give the same count are the
same data twice (issue 66: the wide grid's alpha* 0.1 and 0.125, both 2 tokens of 20); the phase data's
confusion tokens, a whole count at every alpha*, against Theorem 1's premise alpha# < alpha*."""

import copy
from dataclasses import replace

import pytest
import torch
import yaml
from conftest import ROOT

from vitheory.li23.params import LiTokensParams, cell_tokens
from vitheory.li23.tokens import CONFUSION, RELEVANT, TENSOR_NAMES, generate
from vitheory.params import ParamsError, grid_points, parse_params
from vitheory.preset import merge

ATLAS_ALPHA_STAR = "generate.li_tokens.alpha_star"

RAW = yaml.safe_load((ROOT / "params.yaml").read_text())
PRESETS = sorted(path.stem for path in (ROOT / "presets").glob("*.yaml"))


def _set(raw, path, value):
    node = raw
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return raw


# (where, values, the pair and count the error must name, the values less the repeated count); at 20 tokens
# for the phase grids, 40 for sparsify
SHARED_COUNTS = [
    (("phase", "grids", "wide", "alpha_star"), [0.1, 0.125, 0.15], "0.1 and 0.125 both give 2 relevant tokens of 20",
     [0.1, 0.15]),
    (("phase", "grids", "default", "alpha_star"), [0.1, 0.15, 0.16], "0.15 and 0.16 both give 3 relevant tokens of 20",
     [0.1, 0.15, 0.2]),
    (("sparsify", "keep_ratio"), [0.5, 0.25, 0.5], "0.5 and 0.5 both give 20 kept tokens of 40", [0.5, 0.25]),
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


@pytest.mark.parametrize("values,named", [
    ([0.1, 0.11], "0.1 and 0.11 both give 4 relevant and 1 confusion tokens of 40"),
    ([0.1, 0.21], "0.2 (the default) and 0.21 both give 8 relevant and 1 confusion tokens of 40"),  # a point too
])
def test_atlas_values_of_one_token_count_are_refused_in_one_line_naming_both(values, named):
    raw = copy.deepcopy(RAW)
    raw["atlas"]["knobs"] = {ATLAS_ALPHA_STAR: values}
    parse_params(raw)  # the pipeline's own check leaves the atlas's points to the atlas's
    with pytest.raises(ParamsError) as err:
        grid_points(raw)
    assert str(err.value) == (f"atlas.knobs.{ATLAS_ALPHA_STAR} = {values!r} is not allowed: must be values of "
                              f"distinct data: {named}; drop one")
    raw["atlas"]["knobs"] = {ATLAS_ALPHA_STAR: [0.1, 0.15]}
    assert [point.value for point in grid_points(raw)] == [0.1, 0.15]


def _tensors(tokens):
    return [[getattr(split, name) for name in TENSOR_NAMES] for split in generate(tokens)]


def test_the_default_phase_data_are_the_tensors_of_no_confusion_tokens(default_params):
    """confusion_tokens 0 draws what confusion_ratio 0 drew (alpha# = 0 x alpha*): the committed grids' data."""
    data, grids = default_params.phase.data, default_params.phase.grids
    assert data.confusion_tokens == 0
    for alpha in sorted({*grids.default.alpha_star, *grids.wide.alpha_star}):
        before = LiTokensParams(
            seed=data.seed + 1, n_train=data.pool_size, n_test=data.n_test, dim=data.dim, n_patterns=data.n_patterns,
            n_tokens=data.n_tokens, alpha_star=alpha, alpha_confusion=0.0, noise_radius=data.noise_radius,
            noise_dist=data.noise_dist, noisy_share=0.0, noisy_radius=0.0)
        for ours, theirs in zip(_tensors(cell_tokens(data, alpha, data.seed + 1)), _tensors(before)):
            assert all(torch.equal(a, b) for a, b in zip(ours, theirs)), alpha


def test_confusion_tokens_are_one_whole_count_at_every_alpha(default_params):
    data = replace(default_params.phase.data, confusion_tokens=2, pool_size=8, n_test=8)
    for alpha in (0.15, 0.2, 0.3, 0.4):
        for split in generate(cell_tokens(data, alpha, data.seed)):
            assert ((split.kind == CONFUSION).sum(1) == 2).all()
            assert ((split.kind == RELEVANT).sum(1) == round(alpha * 20)).all()


def _phase_raw(confusion_tokens, **keys):
    raw = copy.deepcopy(RAW)
    raw["phase"]["data"]["confusion_tokens"] = confusion_tokens
    for key, value in keys.items():
        _set(raw, key.split("__"), value)
    return raw


# (confusion tokens, other keys set, the error); the default grid gives 2, 3, 4, 6, 8 relevant tokens of 20,
# the wide one 2 to 8
REFUSED = [
    (4, {}, "phase.data.confusion_tokens = 4 is not allowed: must be in [0, 3]: grids.default.alpha_star "
            "[0.1, 0.15, 0.2, 0.3, 0.4] gives [2, 3, 4, 6, 8] relevant tokens of 20, a cell runs only with more "
            "relevant than confusion tokens (Theorem 1's premise alpha# < alpha*), and the grid's fit over alpha* "
            "needs 3 alpha* run"),
    (6, {"phase__grids__default__alpha_star": [0.3, 0.35, 0.4, 0.45, 0.5]},
     "phase.data.confusion_tokens = 6 is not allowed: must be in [0, 5]: grids.wide.alpha_star"),
    # a grid of two alpha* keeps both
    (4, {"phase__grids__default__alpha_star": [0.2, 0.4]},
     "phase.data.confusion_tokens = 4 is not allowed: must be in [0, 3]: grids.default.alpha_star [0.2, 0.4] gives "
     "[4, 8] relevant tokens of 20, a cell runs only with more relevant than confusion tokens (Theorem 1's premise "
     "alpha# < alpha*), and the grid's fit over alpha* needs 2 alpha* run"),
    (3, {"noise_sweep__alpha_star": 0.15},
     "noise_sweep.alpha_star = 0.15 is not allowed: must be an alpha* of more relevant tokens than "
     "phase.data.confusion_tokens (3), Theorem 1's premise alpha# < alpha*: round(alpha* x 20) = 3"),
    (3, {"init_error__alpha_star": 0.15},
     "init_error.alpha_star = 0.15 is not allowed: must be an alpha* of more relevant tokens than "
     "phase.data.confusion_tokens (3), Theorem 1's premise alpha# < alpha*: round(alpha* x 20) = 3"),
    (-1, {}, "phase.data.confusion_tokens = -1 is not allowed: must be >= 0"),
]


@pytest.mark.parametrize("confusion_tokens,keys,message", REFUSED)
def test_confusion_tokens_that_leave_a_grid_too_few_alpha_or_a_sweep_outside_the_premise_are_refused(
        confusion_tokens, keys, message):
    with pytest.raises(ParamsError) as err:
        parse_params(_phase_raw(confusion_tokens, **keys))
    assert "\n" not in str(err.value) and str(err.value).startswith(message)


@pytest.mark.parametrize("confusion_tokens", [0, 1, 2, 3])
def test_confusion_tokens_that_keep_three_alpha_of_each_grid_are_allowed(confusion_tokens):
    params = parse_params(_phase_raw(confusion_tokens))
    run = [alpha for alpha in params.phase.grids.default.alpha_star if params.phase.data.inside_premise(alpha)]
    assert run == [alpha for alpha in (0.1, 0.15, 0.2, 0.3, 0.4) if round(alpha * 20) > confusion_tokens]
