"""PK-10's slices and PK-11's filters on tiny models and planted arrays: the official normalisation, the
control's equal ends, the filters' split of an image, and the deciding quantities' directions (each test
fails when its quantity is computed the other way round)."""

import math

import numpy as np
import pytest
import torch

from vitheory.core.intervals import SETTINGS_GROUP
from vitheory.images.models import SmallResNet, SmallViT
from vitheory.pk22 import frequency, landscape
from vitheory.pk22.claims import (PAPER, cue_quantities, line_negative_share, matched_curvature,
                                  plane_negative_share)
from vitheory.pk22.models import AlterNet

CLAIMS = {claim.id: claim for claim in PAPER.claims}
CFG = landscape.LandscapeParams(n_images=8, extent=1.0, plane_points=3, lines=1, line_points=5, loss_rise=0.5,
                                tolerance=1e-5, seed=0)


def _tiny(kind):
    torch.manual_seed(0)
    if kind == "vit":
        return SmallViT(image_size=8, channels=1, n_classes=3, patch=2, depth=1, heads=2, width=8, mlp_ratio=2,
                        attention="vanilla", pool="cls")
    if kind == "cnn":
        return SmallResNet(channels=1, n_classes=3, widths=[4, 8], blocks=[1, 1])
    return AlterNet(image_size=8, channels=1, n_classes=3, widths=[4, 8], blocks=[1, 2], attention=[0, 1], heads=2)


def _images(n=8):
    generator = torch.Generator().manual_seed(1)
    return torch.randn(n, 1, 8, 8, generator=generator), torch.arange(n) % 3


@pytest.mark.parametrize("kind", ["vit", "cnn", "alternet"])
def test_directions_are_normalised_as_the_official_code_does(kind):
    model = _tiny(kind).eval()
    state = model.state_dict()
    direction = landscape.filter_normalised(state, torch.Generator().manual_seed(0))
    for name, weights in state.items():
        moved = direction[name]
        if weights.dim() < 2 or name.rsplit(".", 1)[-1] == "P":
            assert not moved.any(), name  # biases, norms, BatchNorm statistics, positional encodings stay still
        else:  # the official normalize_filter: norms over dim 0 equal the weights'
            assert torch.allclose(moved.norm(dim=0), weights.norm(dim=0), rtol=1e-4, atol=1e-6), name


@pytest.mark.parametrize("kind", ["vit", "cnn", "alternet"])
def test_reversed_units_are_the_same_function(kind):
    model = _tiny(kind).eval()
    x, _ = _images()
    with torch.no_grad():
        before = model(x)
        model.load_state_dict(landscape.reversed_units(model))
        assert torch.allclose(model(x), before, atol=1e-5)
        assert not all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), _tiny(kind).state_dict().values()))


def test_slices_centre_is_the_checkpoint_and_the_model_is_restored():
    model = _tiny("vit").eval()
    x, y = _images()
    centre = landscape.point_loss(model, x, y)
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    rows = landscape.landscape_rows("vit", 0, model, x, y, CFG)
    assert len(rows) == 3 * 3 + 5 + 5
    plane = {(r[4], r[5]): r[6] for r in rows if r[2] == landscape.PLANE}
    assert plane[(0.0, 0.0)] == pytest.approx(centre[0], rel=1e-6)
    permutation = [r[6] for r in rows if r[2] == landscape.PERMUTATION]
    assert permutation[0] == pytest.approx(permutation[-1], rel=1e-4)  # the same function at both ends
    assert all(torch.equal(v, saved[k]) for k, v in model.state_dict().items())


def test_plane_share_counts_negative_second_differences_within_the_matched_loss():
    alpha = np.linspace(-1, 1, 5)
    bowl = alpha[:, None] ** 2 + alpha[None, :] ** 2
    ripple = bowl + 0.3 * (np.cos(2 * np.pi * alpha)[:, None] + np.cos(2 * np.pi * alpha)[None, :])
    assert plane_negative_share(bowl, 0.5, 1e-5) == 0
    assert plane_negative_share(ripple, 0.5, 1e-5) > 0
    # a rim that saturates is non-convex far out, not within the matched loss
    wide = np.linspace(-1, 1, 7)
    rim = np.minimum(wide[:, None] ** 2 + wide[None, :] ** 2, 0.6)
    assert plane_negative_share(rim, 0.3, 1e-5) == 0 < plane_negative_share(rim, None, 1e-5)


def test_matched_curvature_grows_with_the_curvature_and_censors_a_flat_side():
    t = np.linspace(-1, 1, 9)
    flat, sharp = matched_curvature(t ** 2, t, 0.5), matched_curvature(4 * t ** 2, t, 0.5)
    assert flat[1] == sharp[1] == 0 and min(sharp[0]) > max(flat[0])
    assert matched_curvature(0.1 * t ** 2, t, 0.5) == ([math.log(1.0)] * 2, 2)  # never rises: the end, censored
    assert line_negative_share(-t ** 2, 1e-5) == 1 and line_negative_share(t ** 2, 1e-5) == 0


def _landscape_unit(vit_curvature, vit_ripple):
    t = np.linspace(-1, 1, 5)

    def model(a, r):
        plane = a * (t[:, None] ** 2 + t[None, :] ** 2) + r * (np.cos(2 * np.pi * t)[:, None] + np.cos(2 * np.pi * t)[None, :])
        return {"plane": plane, "lines": [a * t ** 2], "t": t, "permutation": np.sin(np.pi * np.linspace(0, 1, 5))}
    return {"vit": model(vit_curvature, vit_ripple), "cnn": model(4.0, 0.0), "alternet": model(2.0, 0.0)}


def test_pk10_deciding_quantities_point_the_papers_way():
    """A flatter, rippled ViT against a convex, sharper CNN: the ViT's share minus the CNN's is positive,
    the log curvature ratios negative; a sharper ViT turns its ratio positive."""
    settings = {SETTINGS_GROUP: [{"loss_rise": 0.5, "tolerance": 1e-5, "extent": 1.0}]}
    measured = CLAIMS["PK-10"].statistics({"seeds": [_landscape_unit(1.0, 0.3)] * 2, **settings})
    assert measured["vit_minus_cnn_negative_share"] > 0
    assert measured["log_vit_over_cnn_curvature"] < 0 and measured["log_alternet_over_cnn_curvature"] < 0
    assert measured["least_permutation_negative_share"] > 0
    sharper = CLAIMS["PK-10"].statistics({"seeds": [_landscape_unit(8.0, 0.0)] * 2, **settings})
    assert sharper["log_vit_over_cnn_curvature"] > 0 and sharper["vit_minus_cnn_negative_share"] == 0


def test_filters_split_an_image_by_frequency():
    x, _ = _images()
    low, high = frequency.low_pass(x, 0.25), frequency.high_pass(x, 0.25)
    assert torch.allclose(low + high, x, atol=1e-6)
    radius = torch.maximum(*torch.meshgrid(torch.fft.fftfreq(8).abs() * 2, torch.fft.fftfreq(8).abs() * 2,
                                           indexing="ij"))
    assert torch.fft.fft2(low.double())[..., radius > 0.25 + 1e-9].abs().max() < 1e-5
    assert torch.fft.fft2(high.double())[..., radius <= 0.25 + 1e-9].abs().max() < 1e-5


def test_partners_are_of_another_class():
    y = torch.tensor([0, 0, 0, 1, 2, 1, 0, 2])
    partner = frequency.partners(y, 0)
    assert (y[partner] != y).all()


def test_frequency_rows_count_each_cue():
    model = _tiny("cnn").eval()
    x, y = _images()
    cfg = frequency.FrequencyParams(cutoffs=(0.25, 0.5), control_cutoff=0.25, control_epochs=1, seed=0)
    rows = frequency.frequency_rows("cnn", 0, model, x, y, cfg)
    assert [row[2] for row in rows] == [0.25, 0.5]
    assert all(0 <= row[6] + row[7] <= 1 for row in rows)  # a prediction is one digit, the other or neither


def _frequency_unit(vit, cnn):
    def rows(entries):
        low, high, low_cue, high_cue = entries
        return {0.5: {"clean_accuracy": 0.9, "low_accuracy": low, "high_accuracy": high, "low_cue": low_cue,
                      "high_cue": high_cue}}
    return {"vit": rows(vit), "cnn": rows(cnn), frequency.CONTROL: rows((0.8, 0.1, 0.6, 0.1))}


def test_pk11_deciding_quantities_point_the_papers_way():
    """A ViT reading the low frequencies against a CNN reading the high: both differences positive; the
    models swapped, both negative."""
    settings = {SETTINGS_GROUP: [{"classes": 10, "control_cutoff": 0.5}]}
    low_reader, high_reader = (0.7, 0.2, 0.4, 0.2), (0.3, 0.6, 0.15, 0.45)
    measured = CLAIMS["PK-11"].statistics({"seeds": [_frequency_unit(low_reader, high_reader)] * 2, **settings})
    assert measured["vit_minus_cnn_low_reliance"] > 0 and measured["vit_minus_cnn_low_cue_share"] > 0
    assert measured["control_low_cue_share"] == pytest.approx(0.6 / 0.7)
    swapped = CLAIMS["PK-11"].statistics({"seeds": [_frequency_unit(high_reader, low_reader)] * 2, **settings})
    assert swapped["vit_minus_cnn_low_reliance"] < 0 and swapped["vit_minus_cnn_low_cue_share"] < 0
    assert cue_quantities({"clean_accuracy": 0.5, "low_accuracy": 0.5, "high_accuracy": 0.0, "low_cue": 0.0,
                           "high_cue": 0.0})["low_cue_share"] is None


def test_verify_recomputes_the_planes_points_as_the_stage_wrote_them():
    model = _tiny("cnn").eval()
    x, y = _images()
    rows = landscape.landscape_rows("cnn", 1, model, x, y, CFG)
    corners = [(0.0, 0.0), (1.0, -1.0)]
    again = landscape.plane_points("cnn", 1, model, x, y, CFG, corners)
    stored = {(r[4], r[5]): r for r in rows if r[2] == landscape.PLANE}
    assert [stored[point] for point in corners] == again


def _planted_root(root):
    """A root with the prepared images, one seed of tiny ViT, CNN and AlterNet checkpoints, PK-10's and
    PK-11's tables written from them, and params.yaml's sections at that size."""
    import yaml

    from vitheory.core.artifacts import write_table
    from vitheory.core.checkpoint import save_checkpoint, seed_folder
    from vitheory.core.paths import ROOT, artifact
    from vitheory.images.prepare import prepare
    from vitheory.images.training import load_images
    from vitheory.params import load_params

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["real"]["seeds"] = 1
    params["pk_landscape"] |= {"n_images": 8, "plane_points": 3, "line_points": 5, "lines": 1}
    params["pk_frequency"] |= {"cutoffs": [0.25, 0.5], "control_cutoff": 0.5}
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    prepare(load_params(ROOT / "params.yaml").images, root / artifact("images"))  # built here: a clone has none
    data = load_images(root / artifact("images"), ("train", "test"), torch.device("cpu"))
    size = data.image_size
    torch.manual_seed(0)
    models = {"vit": SmallViT(image_size=size, channels=1, n_classes=data.n_classes, patch=2, depth=1, heads=2,
                              width=8, mlp_ratio=2, attention="vanilla", pool="cls"),
              "cnn": SmallResNet(channels=1, n_classes=data.n_classes, widths=[4, 8], blocks=[1, 1]),
              "alternet": AlterNet(image_size=size, channels=1, n_classes=data.n_classes, widths=[4, 8],
                                   blocks=[1, 2], attention=[0, 1], heads=2)}
    folders = {"vit": artifact("real_models") / "vit_natural", "cnn": artifact("real_models") / "cnn_natural",
               "alternet": artifact("pk_models") / "alternet"}
    for name, model in models.items():
        save_checkpoint(root / folders[name] / seed_folder(0), model.eval(), {"seed": 0})
    save_checkpoint(root / artifact("pk_frequency_models") / seed_folder(0), models["cnn"], {"seed": 0})
    cfg = landscape.LandscapeParams(**params["pk_landscape"])
    x, y = landscape.fixed_batch(data.x["train"], data.y["train"], 8, params["real"]["shift"], params["real"]["hflip"],
                                 cfg.seed)
    write_table(root / artifact("pk_landscape_table"), landscape.COLUMNS,
                [row for name, model in models.items() for row in landscape.landscape_rows(name, 0, model, x, y, cfg)])
    fcfg = frequency.FrequencyParams(cutoffs=(0.25, 0.5), control_cutoff=0.5, control_epochs=1, seed=0)
    write_table(root / artifact("pk_frequency_table"), frequency.COLUMNS,
                [row for name in ("vit", "cnn", frequency.CONTROL)
                 for row in frequency.frequency_rows(name, 0, models["cnn" if name == frequency.CONTROL else name],
                                                     data.x["test"], data.y["test"], fcfg)])


def test_verify_rederives_both_tables_and_names_a_changed_value(tmp_path):
    from vitheory.core.artifacts import read_table, write_table
    from vitheory.core.paths import artifact
    from vitheory.pk22 import rederive

    _planted_root(tmp_path)
    assert rederive.pk_landscape(tmp_path) == [] and rederive.pk_frequency(tmp_path) == []
    path = tmp_path / artifact("pk_landscape_table")
    rows = [list(row.values()) for row in read_table(path, landscape.COLUMNS)]
    rows[0][6] += 0.01  # one plane corner's NLL
    write_table(path, landscape.COLUMNS, [tuple(row) for row in rows])
    problems = rederive.pk_landscape(tmp_path)
    assert len(problems) == 1 and "vit seed 0's NLL" in problems[0].text
