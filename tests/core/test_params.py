import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from conftest import ROOT

from vitheory.core.config import set_value_at, value_at
from vitheory.params import ParamsError, load_params, parse_params

RAW = yaml.safe_load((ROOT / "params.yaml").read_text())


def with_value(dotted: str, value):
    raw = copy.deepcopy(RAW)
    set_value_at(raw, dotted, value)
    return raw


def test_default_params_load():
    params = load_params(ROOT / "params.yaml")
    assert params.generate.li_tokens.n_relevant == round(
        params.generate.li_tokens.alpha_star * params.generate.li_tokens.n_tokens)


# (key, bad value, words the error must contain): one case per rule of the loader
BAD_VALUES = [
    ("generate.li_tokens.alpha_star", 1.5, "(0, 1]"),
    ("generate.li_tokens.alpha_star", 0.0, "(0, 1]"),
    ("generate.li_tokens.alpha_confusion", -0.1, "[0, 1]"),
    ("generate.li_tokens.alpha_confusion", 0.2, "< alpha_star"),  # alpha# >= alpha*
    ("train.li_vit.token_fraction", 0.0, "(0, 1]"),
    ("train.li_vit.token_fraction", 1.5, "(0, 1]"),
    ("generate.li_tokens.noise_radius", -0.1, ">= 0"),
    ("generate.li_tokens.n_train", 0, ">= 2"),
    ("generate.li_tokens.n_test", 1, ">= 2"),
    ("generate.li_tokens.dim", 1, ">= 2"),
    ("generate.li_tokens.n_tokens", 0, ">= 1"),
    ("generate.li_tokens.n_patterns", 17, "<= dim"),
    ("generate.li_tokens.seed", -1, ">= 0"),
    ("train.li_vit.model.width", 0, ">= 2"),
    ("train.li_vit.steps", 0, ">= 1"),
    ("train.li_vit.batch_size", 0, ">= 1"),
    ("train.li_vit.batch_size", 513, "<= generate.li_tokens.n_train"),
    ("train.li_vit.lr_attention", 0.0, "> 0"),
    ("train.li_vit.lr_mlp", -1.0, "> 0"),
    ("train.li_vit.model.qk_init", 0.0, "> 0"),
    ("train.li_vit.log_every", 0, ">= 1"),
    ("train.device", "tpu", "one of auto, cpu, cuda"),
    ("generate.li_tokens.noise_dist", "gaussian", "one of uniform_ball, uniform_radius, sphere"),
    ("phase.grids.default.alpha_star", [0.1, 1.2], "in (0, 1] (every element)"),
    ("phase.grids.wide.alpha_star", [], "a non-empty list"),
    ("phase.grids.default.n_train", [2, 0], ">= 1 (every element)"),
    ("phase.grids.wide.n_train", [2, 512], "<= data.pool_size (256)"),
    ("phase.grids.default.n_train", 8, "a non-empty list of integers"),
    ("phase.grids.default.seeds", 0, ">= 1"),
    ("train.li_vit.seeds", 0, ">= 1"),
    ("report.confidence", 1.0, "in [0.5, 1)"),
    ("report.bootstrap", 10, ">= 100"),
    ("sparsify.keep_ratio", [0.5, 0.0], "(0, 1] (every element)"),
    ("sparsify.keep_ratio", [1.5], "(0, 1] (every element)"),
    ("phase.cnn.model.kernel", 4, "odd"),
    ("phase.fit.success_rate", 0.0, "(0, 1]"),
    ("render.dpi", 10, ">= 50"),
    ("render.context", "slides", "one of paper"),
    # [JSL22]
    ("generate.spatial.set_size", 5, "a divisor of n_patches (64)"),
    ("generate.spatial.set_size", 2, "a square whose side divides the grid side (8)"),
    ("generate.spatial.n_patches", 12, "random: blocks need a square grid"),
    ("generate.spatial.q", 1.5, "[0, 1]"),
    ("generate.spatial.q", -0.1, "[0, 1]"),
    ("generate.spatial.n_patches", 1, ">= 2"),
    ("generate.spatial.dim", 1, ">= 2"),
    ("generate.spatial.partition", "stripes", "one of blocks, random"),
    ("generate.spatial.variant_partition", "blocks", "the partition other than 'blocks'"),
    ("generate.spatial_control.set_size", 3, "a divisor of n_patches (16)"),
    ("spatial.vit.score_form", "dot", "one of ppt, qk, free"),
    ("spatial.ablation", ["ppt"], "other than vit.score_form"),
    ("spatial.ablation", "qk", "a non-empty list of values, each one of ppt, qk, free"),
    ("spatial.ablation_lr_mixing", [2.0, 50.0], "one rate per ablation form (1)"),
    ("spatial.lr_mixing", 0.0, "> 0"),
    ("control.vit.width", 0, ">= 1"),
    ("transfer.n_train", [16, 4096], "<= generate.spatial.n_train (2048)"),
    ("transfer.target_error", 0.0, "(0, 1]"),
    ("render.association_threshold", 1.5, "in [-1, 1]"),
    # wrong types
    ("generate.li_tokens.n_train", 5.5, "an integer"),
    ("generate.li_tokens.n_train", True, "an integer"),
    ("train.li_vit.lr_mlp", "fast", "a number"),
    ("train.li_vit.model", 3, "a mapping"),
]


@pytest.mark.parametrize("key,value,allowed", BAD_VALUES)
def test_bad_value_names_key_value_and_rule(key, value, allowed):
    with pytest.raises(ParamsError) as err:
        parse_params(with_value(key, value))
    message = str(err.value)
    assert "\n" not in message
    assert allowed in message
    assert repr(value) in message
    # a cross-key rule may name the key it is checked on; the reported key is a real one
    assert key.rsplit(".", 1)[0] in message


def test_token_counts_must_fit_in_the_sequence():
    raw = with_value("generate.li_tokens.alpha_star", 0.6)
    raw["generate"]["li_tokens"]["alpha_confusion"] = 0.5  # 24 + 20 tokens > 40
    with pytest.raises(ParamsError, match=r"alpha_confusion = 0.5 .*<= n_tokens \(40\)"):
        parse_params(raw)


def test_at_least_one_relevant_token():
    raw = with_value("generate.li_tokens.alpha_star", 0.01)
    raw["generate"]["li_tokens"]["alpha_confusion"] = 0.0  # round(0.01 * 40) = 0 relevant tokens
    with pytest.raises(ParamsError, match=r"alpha_star = 0.01 .*at least one relevant token"):
        parse_params(raw)


def test_unknown_key_is_rejected():
    raw = with_value("train.li_vit.learning_rate", 0.1)
    with pytest.raises(ParamsError, match=r"train\.li_vit\.learning_rate is not a known key"):
        parse_params(raw)


def test_missing_key_is_rejected():
    raw = copy.deepcopy(RAW)
    del raw["train"]["li_vit"]["lr_mlp"]
    with pytest.raises(ParamsError, match=r"train\.li_vit\.lr_mlp is missing"):
        parse_params(raw)


def test_a_dotted_key_is_read_and_written_level_by_level():
    tree = {"real": {"models": {"vit": {"depth": 2}}, "seeds": 3}}
    assert value_at(tree, "real.models.vit.depth") == 2
    for absent in ("real.models.cnn", "real.seeds.count", "real.models.vit.depth.more", "images"):
        with pytest.raises(KeyError, match=re.escape(absent)):
            value_at(tree, absent)
    holder = set_value_at(tree, "real.models.vit.depth", 4)
    assert holder is tree["real"]["models"]["vit"] and tree["real"]["models"]["vit"] == {"depth": 4}
    assert tree["real"]["seeds"] == 3  # its neighbours stay
    created = set_value_at(tree, "pk.hessian.top", 5, level=lambda: {"made": True})
    assert tree["pk"] == {"made": True, "hessian": {"made": True, "top": 5}} and created is tree["pk"]["hessian"]


def test_unreadable_and_invalid_files(tmp_path):
    with pytest.raises(ParamsError, match="cannot be read"):
        load_params(tmp_path / "absent.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("generate: [unclosed\n")
    with pytest.raises(ParamsError, match="not valid YAML at line"):
        load_params(broken)


def test_params_are_frozen(default_params):
    with pytest.raises(AttributeError):
        default_params.train.li_vit.steps = 1


def test_command_line_check_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "params.yaml"
    bad.write_text(yaml.safe_dump(with_value("generate.li_tokens.alpha_star", 2.0)))
    run = subprocess.run([sys.executable, "-m", "vitheory.params", str(bad)], cwd=ROOT,
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1
    assert "generate.li_tokens.alpha_star = 2.0" in run.stderr


def test_the_command_line_check_has_help_and_says_ok_on_the_default():
    shown = subprocess.run([sys.executable, "-m", "vitheory.params", "--help"], cwd=ROOT, capture_output=True,
                           text=True)
    assert shown.returncode == 0 and shown.stdout.startswith("usage: python -m vitheory.params"), shown.stderr
    checked = subprocess.run([sys.executable, "-m", "vitheory.params"], cwd=ROOT, capture_output=True, text=True)
    assert (checked.returncode, checked.stdout) == (0, "params.yaml: ok\n")


def test_a_random_partition_needs_no_square_grid_and_the_variant_is_the_other_partition():
    raw = with_value("generate.spatial.n_patches", 12)
    raw["generate"]["spatial"]["partition"] = "random"
    raw["generate"]["spatial"]["variant_partition"] = "blocks"
    with pytest.raises(ParamsError, match="variant_partition = 'blocks'.*random: blocks need a square grid"):
        parse_params(raw)
    raw["generate"]["spatial"]["n_patches"] = 16
    assert parse_params(raw).generate.spatial.variant_partition == "blocks"
    raw["generate"]["spatial"]["n_patches"] = 12
    raw["generate"]["spatial"]["variant_partition"] = "random"
    with pytest.raises(ParamsError, match="variant_partition = 'random'.*the partition other than 'random'"):
        parse_params(raw)


def test_a_preset_is_validated_before_params_yaml_is_rewritten(tmp_path):
    from vitheory.preset import apply

    params = tmp_path / "params.yaml"
    params.write_text((ROOT / "params.yaml").read_text())
    bad = tmp_path / "bad.yaml"
    bad.write_text("real:\n  models:\n    vit: {heads: 5}\n")  # 5 does not divide the width 64
    with pytest.raises(ParamsError, match="heads = 5"):
        apply(bad, params)
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("real:\n  epochz: 3\n")
    with pytest.raises(ParamsError, match="real.epochz is not in params.yaml"):
        apply(unknown, params)
    assert params.read_text() == (ROOT / "params.yaml").read_text()
    apply(ROOT / "presets/paper.yaml", params)
    assert load_params(params).images.dataset == "cifar10"


PRESET_NAMES = sorted(path.stem for path in (ROOT / "presets").glob("*.yaml") if path.stem != "default")


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_a_preset_changes_only_its_values_and_the_default_gives_params_yaml_back(tmp_path, preset):
    from vitheory.preset import apply, merge

    original = (ROOT / "params.yaml").read_text()
    params = tmp_path / "params.yaml"
    params.write_text(original)
    overrides = yaml.safe_load((ROOT / f"presets/{preset}.yaml").read_text())
    apply(ROOT / f"presets/{preset}.yaml", params)
    assert yaml.safe_load(params.read_text()) == merge(yaml.safe_load(original), overrides)
    changed = [line for line in params.read_text().splitlines() if line not in original.splitlines()]
    assert changed and len(params.read_text().splitlines()) == len(original.splitlines())
    apply(ROOT / "presets/default.yaml", params)
    assert params.read_text() == original


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_a_presets_experiment_sets_what_applying_it_sets_and_writes_nothing(tmp_path, preset):
    """`--as-experiment`'s `-S key=value` settings, read as DVC reads them (YAML values), give the params
    that applying the preset gives; params.yaml is not touched."""
    import shlex

    from vitheory.preset import apply, experiment_command

    params = tmp_path / "params.yaml"
    params.write_text((ROOT / "params.yaml").read_text())

    def dotted_keys(tree):
        return [key for key, value in tree.items() if "." in key] + [
            key for value in tree.values() if isinstance(value, dict) for key in dotted_keys(value)]

    dotted = dotted_keys(yaml.safe_load((ROOT / f"presets/{preset}.yaml").read_text()))
    if dotted:  # DVC's -S cannot address a YAML key that holds a dot: refused, naming it
        with pytest.raises(ParamsError, match=f"{re.escape(dotted[0])}, whose YAML key holds a dot"):
            experiment_command(ROOT / f"presets/{preset}.yaml", params)
        return
    command = shlex.split(experiment_command(ROOT / f"presets/{preset}.yaml", params))
    assert command[:5] == ["dvc", "exp", "run", "--queue", "--name"] and command[5] == preset
    assert params.read_text() == (ROOT / "params.yaml").read_text()
    expected = yaml.safe_load(params.read_text())
    for setting in command[7::2]:
        key, value = setting.split("=", 1)
        set_value_at(expected, key, yaml.safe_load(value))
    apply(ROOT / f"presets/{preset}.yaml", params)
    assert yaml.safe_load(params.read_text()) == expected


def test_a_bad_presets_experiment_is_refused_before_a_command_is_made(tmp_path):
    from vitheory.preset import experiment_command

    bad = tmp_path / "bad.yaml"
    bad.write_text("real:\n  seeds: 0\n")
    with pytest.raises(ParamsError, match="real.seeds"):
        experiment_command(bad)


def test_every_preset_in_turn_then_the_default_gives_params_yaml_back(tmp_path):
    from vitheory.preset import apply

    original = (ROOT / "params.yaml").read_text()
    params = tmp_path / "params.yaml"
    params.write_text(original)
    apply(ROOT / "presets/default.yaml", params)
    assert params.read_text() == original  # the default on the default changes nothing
    for preset in PRESET_NAMES:
        apply(ROOT / f"presets/{preset}.yaml", params)
    apply(ROOT / "presets/default.yaml", params)
    assert params.read_text() == original


def test_a_changed_value_carries_the_presets_comment_not_the_defaults(tmp_path):
    from vitheory.preset import apply

    params = tmp_path / "params.yaml"
    params.write_text((ROOT / "params.yaml").read_text())
    apply(ROOT / "presets/quick.yaml", params)
    lines = params.read_text().splitlines()
    assert "  n_images: 359           # all of the digits' test split" in lines
    assert not any("cluttered test split" in line for line in lines)  # the default's comment, now wrong
    untouched = next(line for line in (ROOT / "params.yaml").read_text().splitlines() if line.startswith("  shift: "))
    assert "#" in untouched and untouched in lines  # a key the preset leaves keeps its comment


def test_the_default_preset_is_generated_from_params_yaml():
    from vitheory.preset import default_preset

    assert (ROOT / "presets/default.yaml").read_text() == default_preset(ROOT / "params.yaml"), \
        "presets/default.yaml is stale: run `python -m vitheory.preset --write-default`"


def test_the_preset_command_has_help_and_names_the_presets_when_one_is_mistyped(tmp_path, capsys):
    from vitheory.preset import main

    with pytest.raises(SystemExit) as shown:
        main(["--help"])
    shown_help = capsys.readouterr().out
    assert shown.value.code == 0 and "presets/" in shown_help and shown_help.startswith("usage: python -m vitheory.preset ")
    params = tmp_path / "params.yaml"
    params.write_text((ROOT / "params.yaml").read_text())
    assert main(["quik", str(params)]) == 2
    error = capsys.readouterr().err
    assert "no preset 'quik'" in error and "(decisive, default, fashion_mnist, paper, quick)" in error
    assert params.read_text() == (ROOT / "params.yaml").read_text()
    assert main(["quick", str(params)]) == 0
    assert load_params(params).images.dataset == "digits"
    assert "`python -m vitheory.preset default` undoes it" in capsys.readouterr().out
    assert main(["default", str(params)]) == 0
    said = capsys.readouterr().out
    assert "is back at its defaults" in said and "undoes" not in said


def test_alternet_must_have_the_shape_of_the_cnn_it_is_compared_with():
    # PK-6 and PK-8 compare AlterNet with train_real's CNN, the one CNN every claim shares (issue 25)
    with pytest.raises(ParamsError, match=r"pk_train\.alternet\.blocks = \[2, 2\].*real\.models\.cnn\.blocks"):
        parse_params(with_value("pk_train.alternet.blocks", [2, 2]))
    with pytest.raises(ParamsError, match=r"pk_train\.alternet\.widths = \[16, 64\].*real\.models\.cnn\.widths"):
        parse_params(with_value("pk_train.alternet.widths", [16, 64]))


@pytest.mark.parametrize(("dataset", "train_fraction"), [("cluttered_digits", 0.5), ("digits", 1.0)])
def test_the_hessians_batches_must_fill_from_the_smallest_fractions_images_before_any_training(tmp_path, dataset,
                                                                                              train_fraction):
    """The count the check uses is the training split prepare_images writes (built here, no download); at
    images.train_fraction 0.25 vit_small's 65 cluttered canvases cannot fill pk_analysis's 4 x 32 mini-batches,
    and the loader says so (as the atlas's point at 0.25 failed in pk_analysis at ef00d5b), and so does the
    atlas's grid check for a grid holding that point."""
    from vitheory.images.prepare import prepare
    from vitheory.images.training import load_images
    from vitheory.params import grid_points
    from vitheory.pk22.package import offline_training_labels

    raw = with_value("images.dataset", dataset)
    raw["images"]["train_fraction"] = train_fraction
    params = parse_params(raw)
    prepare(params.images, tmp_path)
    written = load_images(tmp_path, ("train",), torch.device("cpu")).y["train"]
    assert torch.equal(torch.bincount(offline_training_labels(params.images)), torch.bincount(written))
    fits = with_value("images.train_fraction", 0.25)
    with pytest.raises(ParamsError, match=r"4 x 32 exceeds the 65 training images model vit_small "
                                          r"\(pk_train\.fractions 0\.1 of images\.train_fraction 0\.25\)"):
        parse_params(fits)
    fits["pk"]["hessian_batch_size"] = 16
    parse_params(fits)
    grid = with_value("atlas.knobs", {"images.train_fraction": [0.25, 1.0]})
    with pytest.raises(ParamsError, match="images.train_fraction: its point 0.25 is not a valid params file"):
        grid_points(grid)


def test_pk7_needs_a_closing_attention_block_with_a_block_before_it_and_a_vit_of_two_blocks():
    with pytest.raises(ParamsError, match=r"pk_train\.alternet\.attention = \[0, 0\].*PK-7 compares the two"):
        parse_params(with_value("pk_train.alternet.attention", [0, 0]))
    with pytest.raises(ParamsError, match=r"real\.models\.vit\.depth = 1 .*>= 2: PK-7"):
        parse_params(with_value("real.models.vit.depth", 1))


def _record(claim_id, **checks):
    """A claims.json record whose criteria are `name=(verdict, seeds_needed)`."""
    return {"id": claim_id, "conditions": {},
            "criteria": {name: {"verdict": verdict, "seeds_needed": needed} for name, (verdict, needed) in checks.items()}}


def test_the_decisive_preset_raises_each_family_to_what_its_inconclusive_criteria_need():
    from vitheory.preset import decisive_seeds

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    real, sparsify = params["real"]["seeds"], params["sparsify"]["seeds"]
    records = [_record("LI-4", a=("inconclusive", sparsify + 10), b=("inconclusive", sparsify + 3), c=("holds", 900)),
               _record("PK-3", a=("inconclusive", real - 1)),  # already enough: not raised
               _record("PK-7", a=("inconclusive", real + 2)), _record("JSL-5", a=("inconclusive", real + 5)),
               _record("JSL-3", a=("inconclusive", 5000)),  # beyond what any run affords: left out
               _record("PK-8", a=("inconclusive", None)),  # no plan possible
               _record("JSL-7", a=("inconclusive", 50))]  # its units are not seeds
    raised = decisive_seeds(records, params)
    assert {key: count for key, (count, _) in raised.items()} == {"sparsify.seeds": sparsify + 10,
                                                                  "real.seeds": real + 5}
    assert raised["real.seeds"][1] == [f"PK-7 a: {real + 2}", f"JSL-5 a: {real + 5}"]


def test_every_claim_names_the_params_that_set_its_seeds():
    from vitheory.papers import PAPERS

    for claim in (claim for paper in PAPERS for claim in paper.claims):
        assert claim.seeds or claim.id == "JSL-7", f"{claim.id} names no seeds key"
        for key in claim.seeds:
            assert isinstance(value_at(RAW, key), int) and key.endswith(".seeds"), f"{claim.id}: {key}"


def test_the_decisive_preset_is_generated_from_the_committed_run():
    from vitheory.preset import decisive_preset

    assert (ROOT / "presets/decisive.yaml").read_text() == decisive_preset(ROOT / "reports/claims.json",
                                                                             ROOT / "params.yaml"), \
        "presets/decisive.yaml is stale: run `python -m vitheory.preset --write-decisive`"


def _seeds_keys():
    from vitheory.papers import PAPERS
    return sorted({key for paper in PAPERS for claim in paper.claims for key in claim.seeds})


@pytest.mark.parametrize("key", _seeds_keys())
def test_one_seed_is_refused_for_every_claims_seeds(key):
    """One seed has no spread: core/claims.py would take it for a fixed setting and decide on it alone."""
    with pytest.raises(ParamsError, match=rf"^{re.escape(key)} = 1 is not allowed: must be >= 2: \S+'s intervals"):
        parse_params(with_value(key, 1))
    parse_params(with_value(key, 2))


def test_fashion_mnists_training_labels_are_known_before_any_training_where_its_files_are(tmp_path):
    """Read from the local files, the labels the check counts are those prepare_images writes; with the files
    missing, the check leaves the refusal to prepare_images (one line there, not a traceback here)."""
    from vitheory.images.datasets import DatasetUnavailable, read_fashion_mnist
    from vitheory.images.prepare import prepare
    from vitheory.images.training import load_images
    from vitheory.pk22.package import offline_training_labels

    raw = with_value("images.dataset", "fashion_mnist")
    raw["images"]["fashion_mnist_path"] = str(tmp_path / "absent")
    assert offline_training_labels(parse_params(raw).images) is None
    raw["images"] |= {"fashion_mnist_path": "/usr/share/datasets/fashion-mnist", "train_fraction": 0.05,
                      "official_test_fraction": 0.01}
    params = parse_params(raw)
    try:
        read_fashion_mnist(Path(params.images.fashion_mnist_path))
    except DatasetUnavailable:
        pytest.skip("Fashion-MNIST's files are not installed (apt-get install dataset-fashion-mnist)")
    prepare(params.images, tmp_path / "images")
    written = load_images(tmp_path / "images", ("train",), torch.device("cpu")).y["train"]
    assert torch.equal(offline_training_labels(params.images), written)
