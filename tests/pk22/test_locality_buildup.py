"""PK-12's windowed ViT and PK-13's placements on tiny models: the windows' mask on the grid, a window that
covers the grid being global attention, the control moving the windows, placements where they are named;
their stages' functions with 1 epoch and 2 seeds on tiny images; the deciding quantities' directions (each
test fails when its quantity is computed the other way round); and verify's re-derivation of both tables."""

import math

import pytest
import torch

from vitheory.core.intervals import SETTINGS_GROUP
from vitheory.images.models import SmallViT, window_mask
from vitheory.images.params import RealTrainParams, ViTPreset
from vitheory.images.training import LoadedImages
from vitheory.params import load_params
from vitheory.core.paths import ROOT
from vitheory.pk22 import buildup, locality
from vitheory.pk22.claims import PAPER
from vitheory.pk22.models import AlterNet
from vitheory.pk22.params import AlterNetPreset

CLAIMS = {claim.id: claim for claim in PAPER.claims}
PRESET = ViTPreset(patch=2, depth=2, heads=2, width=8, mlp_ratio=2, attention="vanilla", pool="cls")
ALTERNET = AlterNetPreset(widths=(8, 16), blocks=(2, 3), attention=(0, 1), heads=4)  # (4, 8) crashed torch in fit here


def _images(n=12, side=8, seed=1):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(n, 1, side, side, generator=generator), torch.arange(n) % 3


def test_a_window_holds_the_patches_around_its_own_and_the_class_token():
    mask = window_mask(8, 3, 1)
    assert mask.shape == (65, 65) and mask[0].all() and mask[:, 0].all()  # the class token: global
    patches = mask[1:, 1:]
    assert patches[9].sum() == 9 and patches[0].sum() == 4  # (1, 1) inside the grid, (0, 0) at its corner
    assert patches[9, [0, 1, 2, 8, 10, 16, 17, 18]].all() and not patches[9, 3] and not patches[9, 27]
    assert (patches == patches.T).all()
    assert window_mask(8, 15, 1).all()  # a window reaching across the grid is global attention


def test_a_window_covering_the_grid_is_the_global_vit_and_a_small_one_is_not():
    torch.manual_seed(0)
    global_vit = SmallViT(image_size=8, channels=1, n_classes=3, **vars(PRESET))
    x, _ = _images()
    with torch.no_grad():
        for window, equal in ((7, True), (3, False)):
            local = SmallViT(image_size=8, channels=1, n_classes=3, **vars(PRESET), window=window)
            local.load_state_dict(global_vit.state_dict())
            assert torch.allclose(local(x), global_vit(x), atol=1e-6) == equal
            assert local.config["window"] == window and "window" not in global_vit.config
    with pytest.raises(ValueError, match="odd"):
        SmallViT(image_size=8, channels=1, n_classes=3, **vars(PRESET), window=4)


def test_the_control_moves_the_windows_off_their_neighbours():
    torch.manual_seed(0)
    model = SmallViT(image_size=8, channels=1, n_classes=3, **vars(PRESET), window=3).eval()
    moved = locality.off_grid(model, 0)
    x, _ = _images()
    with torch.no_grad():
        assert not torch.allclose(moved(x), model(x)) and model.window_order is None
    order = moved.window_order
    shuffled = window_mask(4, 3, 1, order)[1:, 1:]
    assert (shuffled.sum(1).sort().values == window_mask(4, 3, 1)[1:, 1:].sum(1).sort().values).all()


def test_placements_put_attention_where_they_say_and_refuse_a_downsampling_block():
    from vitheory.pk22.models import MapAttention

    for placement, expected in (((3,), [3]), ((3, 4), [3, 4]), ((0, 4), [0, 4])):
        model = buildup.build_placement(ALTERNET, placement, 8, 1, 3)
        assert [i for i, layer in enumerate(model.layers) if isinstance(layer, MapAttention)] == expected
    official = AlterNet(image_size=8, channels=1, n_classes=3, **vars(ALTERNET))
    assert buildup.official_placement(ALTERNET) == [4] and "placement" not in official.config
    with pytest.raises(ValueError, match="downsampling"):
        buildup.build_placement(ALTERNET, (2,), 8, 1, 3)


def test_the_placements_are_validated_against_alternets_blocks():
    good = buildup.BuildUpParams(stage_start=(3,), model_end=(3, 4))
    assert list(buildup.placement_violations(ALTERNET, good)) == []
    for bad, key in ((buildup.BuildUpParams(stage_start=(4,), model_end=(3, 4)), "stage_start"),
                     (buildup.BuildUpParams(stage_start=(3,), model_end=(4,)), "model_end"),
                     (buildup.BuildUpParams(stage_start=(2,), model_end=(3, 4)), "stage_start")):
        assert key in [found[0] for found in buildup.placement_violations(ALTERNET, bad)]


def test_the_default_params_validate_and_a_hessian_beyond_pk_analysiss_is_refused(tmp_path):
    import yaml

    from vitheory.core.errors import ParamsError

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["pk_locality"]["hessian_batches"] = params["pk"]["hessian_batches"] + 1
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(ParamsError, match="pk_locality.hessian_batches"):
        load_params(tmp_path / "params.yaml")


def _data(n=24):
    x, y = _images(n)
    return LoadedImages({"train": x, "test": x[:12]}, {"train": y, "test": y[:12]}, None, 8, 1, 3)


REAL = RealTrainParams(**{**vars(load_params(ROOT / "params.yaml").real), "seeds": 2, "epochs": 1, "batch_size": 8})


def test_the_stages_train_two_seeds_of_every_window_and_placement(tmp_path):
    data = _data()
    trained = locality.train_windows(PRESET, (3,), REAL, data, torch.device("cpu"), tmp_path / "windows")
    assert [len(models) for models in trained.values()] == [2]
    assert (tmp_path / "windows" / "vit_window3" / "seed_1").is_dir()
    row = locality.accuracy_row("vit_window3", 0, 3, trained[3][0], data.x["test"], data.y["test"])
    assert row[:3] == ("vit_window3", 0, 3) and 0 <= row[4] <= 1
    cfg = buildup.BuildUpParams(stage_start=(3,), model_end=(3, 4))
    placed = buildup.train_placements(ALTERNET, cfg, REAL, data, torch.device("cpu"), tmp_path / "placements")
    assert set(placed) == {"stage_start", "model_end"} and all(len(models) == 2 for models in placed.values())
    lesioned = buildup.without_closing_attention(placed["model_end"][0])
    with torch.no_grad():
        assert not torch.allclose(lesioned(data.x["test"]), placed["model_end"][0](data.x["test"]))


def _locality_unit(window_accuracy, window_max, window_share, control=0.6):
    batches = [{"max": 10.0, "share": 0.2}] * 2
    return {"accuracy": {"vit": 0.8, "vit_window3": window_accuracy, "vit_window5": 0.8, "off_grid": control},
            "hessian": {"vit": batches, "vit_window3": [{"max": window_max, "share": window_share}] * 2,
                        "vit_window5": batches}}


def test_pk12_deciding_quantities_point_the_papers_way():
    """A more accurate, flatter 3 x 3 window: its accuracy over the global ViT's, its share and lambda_max
    under; the window sharper and worse, all three the other way."""
    settings = {SETTINGS_GROUP: [{"windows": [3, 5], "control_window": 3}]}
    better = CLAIMS["PK-12"].statistics({"seeds": [_locality_unit(0.85, 5.0, 0.1)] * 2, **settings})
    assert better["worst_window_minus_global_accuracy"] == 0  # the 5 x 5 window matches, the 3 x 3 beats
    assert better["vit_window3_minus_global_accuracy"] == pytest.approx(0.05)
    assert better["local_minus_global_negative_curvature_share"] == pytest.approx(-0.05)
    assert better["log_local_over_global_lambda_max"] == pytest.approx(math.log(0.5) / 2)
    assert better["window_minus_off_grid_accuracy"] == pytest.approx(0.25)
    worse = CLAIMS["PK-12"].statistics({"seeds": [_locality_unit(0.7, 20.0, 0.4)] * 2, **settings})
    assert worse["worst_window_minus_global_accuracy"] == pytest.approx(-0.1)
    assert worse["local_minus_global_negative_curvature_share"] > 0 and worse["log_local_over_global_lambda_max"] > 0


def test_pk13_deciding_quantities_point_the_papers_way():
    unit = {"cnn": 0.8, "alternet": 0.86, "stage_start": 0.82, "model_end": 0.84, "lesioned": 0.5}
    measured = CLAIMS["PK-13"].statistics({"seeds": [unit] * 2})
    assert measured["stage_end_minus_stage_start_accuracy"] == pytest.approx(0.04)
    assert measured["stage_end_minus_model_end_accuracy"] == pytest.approx(0.02)
    assert measured["stage_end_minus_lesioned_accuracy"] == pytest.approx(0.36)
    swapped = CLAIMS["PK-13"].statistics({"seeds": [unit | {"alternet": 0.8, "stage_start": 0.86}] * 2})
    assert swapped["stage_end_minus_stage_start_accuracy"] < 0 and swapped["stage_end_minus_model_end_accuracy"] < 0


def _planted_root(root):
    """A root with the prepared images (params.yaml's, one seed), tiny checkpoints where PK-12's and PK-13's
    stages read and write them, and both tables written from them as the stages write them."""
    import yaml

    from vitheory.core.artifacts import write_table
    from vitheory.core.checkpoint import save_checkpoint, seed_folder
    from vitheory.core.paths import artifact
    from vitheory.images.models import SmallResNet
    from vitheory.images.prepare import prepare
    from vitheory.images.training import evaluate, load_images

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["real"]["seeds"] = 1
    params["pk_locality"]["windows"] = [3]
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    prepare(load_params(ROOT / "params.yaml").images, root / artifact("images"))
    data = load_images(root / artifact("images"), ("test",), torch.device("cpu"))
    x, y, shape = data.x["test"], data.y["test"], (data.image_size, data.channels, data.n_classes)
    torch.manual_seed(0)
    vit = SmallViT(image_size=shape[0], channels=1, n_classes=shape[2], **vars(PRESET))
    window = locality.build_window_vit(PRESET, 3, *shape)
    save_checkpoint(root / artifact("real_models") / "vit_natural" / seed_folder(0), vit.eval(), {"seed": 0})
    save_checkpoint(root / artifact("pk_locality_models") / "vit_window3" / seed_folder(0), window.eval(), {"seed": 0})
    write_table(root / artifact("pk_locality_table"), locality.COLUMNS, [
        locality.accuracy_row("vit", 0, 0, vit, x, y), locality.accuracy_row("vit_window3", 0, 3, window, x, y),
        locality.accuracy_row("off_grid", 0, 3, locality.off_grid(window, params["pk_locality"]["seed"]), x, y)])
    models = {"cnn": SmallResNet(channels=1, n_classes=shape[2], widths=[8, 16], blocks=[2, 3]),
              "alternet": AlterNet(image_size=shape[0], channels=1, n_classes=shape[2], **vars(ALTERNET)),
              "stage_start": buildup.build_placement(ALTERNET, (3,), *shape),
              "model_end": buildup.build_placement(ALTERNET, (3, 4), *shape)}
    folders = {"cnn": artifact("real_models") / "cnn_natural", "alternet": artifact("pk_models") / "alternet"} | {
        name: artifact("pk_buildup_models") / name for name in buildup.PLACEMENTS}
    for name, model in models.items():
        save_checkpoint(root / folders[name] / seed_folder(0), model.eval(), {"seed": 0})
    models["lesioned"] = buildup.without_closing_attention(models["alternet"])
    write_table(root / artifact("pk_buildup_table"), buildup.COLUMNS,
                [(name, 0, *(evaluate(model, x, y)[k] for k in ("loss", "accuracy"))) for name, model in models.items()])


def test_verify_rederives_both_tables_and_names_a_changed_value(tmp_path):
    from vitheory.core.artifacts import read_table, write_table
    from vitheory.core.paths import artifact
    from vitheory.pk22 import rederive

    _planted_root(tmp_path)
    assert rederive.pk_locality(tmp_path) == [] and rederive.pk_buildup(tmp_path) == []
    for name, columns, check in (("pk_locality_table", locality.COLUMNS, rederive.pk_locality),
                                 ("pk_buildup_table", buildup.COLUMNS, rederive.pk_buildup)):
        path = tmp_path / artifact(name)
        rows = [list(row.values()) for row in read_table(path, columns)]
        rows[-1][-1] += 0.01  # the control's accuracy
        write_table(path, columns, [tuple(row) for row in rows])
        problems = check(tmp_path)
        assert len(problems) == 1 and "differ from the checkpoints'" in problems[0].text
