"""The figures read the same everywhere (../shared/STYLE.md): each model keeps one colour in every panel
and every figure, pk_lesion draws one bar per branch (not per seed row) with labels that do not overlap,
and real_accuracy, whose axis does not start at 0, draws points, not bars. Each figure is rendered from
small synthetic long-form tables and read back from its matplotlib objects."""

import itertools

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.collections import LineCollection, PathCollection  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from vitheory.core.figures import MODEL_COLOURS, model_colour, set_theme  # noqa: E402
from vitheory.images.params import REAL_MODELS  # noqa: E402
from vitheory.jsl22 import figures as jsl  # noqa: E402
from vitheory.li23 import figures as li  # noqa: E402
from vitheory.pk22 import figures as pk  # noqa: E402
from vitheory.pk22.claims import NOISE_DECIDES, PAPER, SHARE_COMPARISONS  # noqa: E402
from vitheory.pk22.noise import NORMALISATIONS  # noqa: E402
from vitheory.pk22.tables import table_path  # noqa: E402

RNG_SEED = 0
COMPARISONS = tuple(SHARE_COMPARISONS.values())
LEAST_COLOUR_DISTANCE = 35  # CIELAB: the colorblind palette's orange and vermillion are 25.6 apart
SEEDS = (0, 1, 2)
# one label per model name in both papers
LABELS = {**pk.PK_MODELS, **{name: model.label for name, model in REAL_MODELS.items()}}


def hessian_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """pk_analysis's Hessian tables for every [PK22] model: the top eigenvalues and both ends per
    (seed, mini-batch), and a density of a few nodes per probe."""
    rng = np.random.default_rng(RNG_SEED)
    ends, nodes = [], []
    for model, seed, batch in itertools.product(pk.PK_MODELS, SEEDS, (0, 1)):
        ends += [(model, seed, batch, "top", rank, value) for rank, value in enumerate(rng.normal(10, 5, 5))]
        ends += [(model, seed, batch, "min", 0, -rng.uniform(0, 5)), (model, seed, batch, "max", 0, rng.uniform(5, 50))]
        nodes += [(model, seed, batch, probe, node, value, 0.25)
                  for probe in (-1, 0) for node, value in enumerate(rng.normal(0, 5, 4))]
    return (pd.DataFrame(ends, columns=["model", "seed", "batch", "which", "rank", "eigenvalue"]),
            pd.DataFrame(nodes, columns=["model", "seed", "batch", "probe", "node", "eigenvalue", "weight"]))


# (stage, position, kind) of every branch lesion.py removes: AlterNet of two stages whose second closes with
# attention (its downsampling block 0 left out), and a ViT of depth 2, attention and MLP in each block
LESIONED = {"alternet": [(0, 0, "conv"), (0, 1, "conv"), (1, 1, "conv"), (1, 2, "msa")],
            "cnn": [(0, 0, "conv"), (0, 1, "conv"), (1, 1, "conv"), (1, 2, "conv")],
            "vit": [(0, block, kind) for block in (0, 1) for kind in ("msa", "mlp")]}


def lesion_table() -> pd.DataFrame:
    rng = np.random.default_rng(RNG_SEED)
    return pd.DataFrame([(model, seed, index, kind, stage, position, rng.uniform(0, 0.8))
                         for model, branches in LESIONED.items() for seed in SEEDS
                         for index, (stage, position, kind) in enumerate(branches)],
                        columns=["model", "seed", "index", "kind", "stage", "position", "accuracy_drop"])


def real_table() -> pd.DataFrame:
    rng = np.random.default_rng(RNG_SEED)
    return pd.DataFrame([(model, pixels, seed, rng.uniform(0.7, 0.95))
                         for model in REAL_MODELS for pixels in ("natural", "permuted") for seed in SEEDS],
                        columns=["model", "pixels", "seed", "test_accuracy"])


def handle_colour(handle) -> tuple[float, float, float]:
    """The colour a legend handle or a plotted artist shows its model in."""
    if isinstance(handle, ErrorbarContainer):
        handle = handle.lines[0]
    if isinstance(handle, Line2D):
        return to_rgb(handle.get_markerfacecolor() if handle.get_linestyle() == "None" else handle.get_color())
    colours = handle.get_facecolor() if len(handle.get_facecolor()) else handle.get_edgecolor()
    return to_rgb(np.atleast_2d(colours)[0])


def model_colours(fig: plt.Figure) -> dict[str, set]:
    """Each model label to the colours every legend entry and labelled line of `fig` gives it; a label
    that is a model's, or starts with one and a colon (pk_hessian's 'ViT: NEP 0.03, APE 52.6')."""
    found: dict[str, set] = {}
    for legend in [ax.get_legend() for ax in fig.axes] + fig.legends:
        if legend is not None:
            for handle, text in zip(legend.legend_handles, (t.get_text() for t in legend.texts)):
                model = text.split(":")[0]
                if model in LABELS.values():
                    found.setdefault(model, set()).add(handle_colour(handle))
    for ax in fig.axes:
        entries = [(line, line.get_label()) for line in ax.lines]
        for handle, text in entries:
            model = text.split(":")[0]
            if model in LABELS.values():
                found.setdefault(model, set()).add(handle_colour(handle))
    return found


@pytest.fixture(autouse=True)
def theme():
    with matplotlib.rc_context():  # the render stage's theme, undone for the tests after these
        set_theme("notebook")
        yield
    plt.close("all")


def test_pk_hessian_gives_each_model_one_colour_in_every_panel(tmp_path):
    fig = pk.pk_hessian_figure(*hessian_tables(), COMPARISONS)
    fig.savefig(tmp_path / "pk_hessian.png")
    found = model_colours(fig)
    assert set(found) == set(pk.PK_MODELS.values()), f"models drawn: {sorted(found)}"
    assert all(len(colours) == 1 for colours in found.values()), \
        f"a model drawn in several colours across the panels: {found}"
    assert len({colour for colours in found.values() for colour in colours}) == len(found), \
        f"two models share a colour: {found}"


def test_models_keep_their_colour_from_figure_to_figure(tmp_path):
    figures = {"pk_hessian": pk.pk_hessian_figure(*hessian_tables(), COMPARISONS),
               "real_accuracy": jsl.real_accuracy_figure(real_table())}
    for name, fig in figures.items():
        fig.savefig(tmp_path / f"{name}.png")
    labels = {label: model for model, label in LABELS.items()}
    for name, fig in figures.items():
        for label, colours in model_colours(fig).items():
            assert colours == {to_rgb(model_colour(labels[label]))}, \
                f"{name}: {label} drawn in {colours}, not its MODEL_COLOURS colour"


def lab(colour) -> np.ndarray:
    """CIELAB (D65) of an sRGB colour: distances there follow how far apart colours look."""
    linear = np.array([c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(colour)])
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
    f = np.cbrt(np.maximum(xyz / np.array([0.95047, 1.0, 1.08883]), 0.008856))
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def nearest_pair(colours: dict) -> tuple[float, tuple]:
    return min((float(np.linalg.norm(lab(colours[a]) - lab(colours[b]))), (a, b))
               for a, b in itertools.combinations(colours, 2))


def test_model_colours_tell_every_model_apart():
    distance, pair = nearest_pair(MODEL_COLOURS)
    assert distance >= LEAST_COLOUR_DISTANCE, f"{pair} only {distance:.1f} apart"
    assert nearest_pair({"orange": "#de8f05", "vermillion": "#d55e00"})[0] < LEAST_COLOUR_DISTANCE
    with pytest.raises(ValueError, match="MODEL_COLOURS"):
        model_colour("resnet")


def test_pk_lesion_draws_one_bar_per_branch_with_its_seeds_as_dots(tmp_path):
    table = lesion_table()
    fig = pk.pk_lesion_figure(table)
    fig.savefig(tmp_path / "pk_lesion.png")
    renderer = fig.canvas.get_renderer()
    for ax, model in zip(fig.axes, ("alternet", "cnn", "vit"), strict=True):
        mine = table[table.model == model]
        bars = [patch for patch in ax.patches if isinstance(patch, Rectangle) and patch.get_height() > 0]
        assert len(bars) == len(LESIONED[model]), f"{model}: {len(bars)} bars for {len(LESIONED[model])} branches"
        labels = [label.get_text() for label in ax.get_xticklabels()]
        expected = [pk.branch_label(model, *branch) for branch in LESIONED[model]]
        assert labels == expected, f"{model}: bars {labels}"
        means = mine.groupby(["stage", "position", "kind"], sort=False).accuracy_drop.mean()
        assert sorted(bar.get_height() for bar in bars) == pytest.approx(sorted(means))
        dots = sum(len(collection.get_offsets()) for collection in ax.collections)
        assert dots == len(mine), f"{model}: {dots} dots for {len(mine)} seed rows"
        boxes = [label.get_window_extent(renderer) for label in ax.get_xticklabels()]
        assert not any(a.overlaps(b) for a, b in itertools.combinations(boxes, 2)), f"{model}: tick labels overlap"


def test_real_accuracy_draws_points_with_the_claims_floors(tmp_path):
    runs = real_table()
    fig = jsl.real_accuracy_figure(runs, positional_margin=0.05)
    fig.savefig(tmp_path / "real_accuracy.png")
    ax = fig.axes[0]
    assert not [patch for patch in ax.patches if isinstance(patch, Rectangle)], \
        "bars on an axis that need not start at 0"
    points = [container for container in ax.containers if isinstance(container, ErrorbarContainer)]
    colours = [handle_colour(container) for container in points]
    pairs = runs[["model", "pixels"]].drop_duplicates()
    assert len(points) == len(pairs), f"{len(points)} points for {len(pairs)} (model, pixels) pairs"
    assert sorted(colours) == sorted(to_rgb(model_colour(model)) for model in pairs.model), \
        "each (model, pixels) point in its model's colour"
    natural_vit = runs[(runs.model == "vit") & (runs.pixels == "natural")].test_accuracy.mean()
    floors = {line.get_label().split(" ")[0]: line.get_segments()[0][0][1]
              for line in ax.collections if isinstance(line, LineCollection) and line.get_label().startswith("JSL")}
    assert floors == pytest.approx({"JSL-6": natural_vit - 0.05})


def test_pk_hessian_keeps_its_legend_off_the_panels_and_shows_the_deciding_share(tmp_path):
    hessian, density = hessian_tables()
    fig = pk.pk_hessian_figure(hessian, density, COMPARISONS)
    fig.savefig(tmp_path / "pk_hessian.png")
    renderer = fig.canvas.get_renderer()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + fig.legends
    assert legends and not any(legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))
                               for legend in legends for ax in fig.axes), "a legend covers a panel"
    share = fig.axes[-1]
    shares = pk.negative_curvature_shares(density)
    assert sum(len(c.get_offsets()) for c in share.collections if isinstance(c, PathCollection)) == len(shares), \
        "one dot per model and seed"
    means = shares.groupby("model").share.mean()
    for model, against in COMPARISONS:
        assert f"{pk.PK_MODELS[model]} − {pk.PK_MODELS[against]}: {means[model] - means[against]:+.3g}" \
            in share.get_xlabel()


def test_pk_noise_marks_the_panel_of_the_normalisation_pk5_decides_on(tmp_path):
    drops = dict(zip(NORMALISATIONS, (0.1, 0.3)))
    table = pd.DataFrame([(model, seed, normalisation, frequency, 0.9, drops[normalisation])
                          for model in ("vit", "cnn") for seed in SEEDS for normalisation in NORMALISATIONS
                          for frequency in (0.0, 0.5, 1.0)],
                         columns=["model", "seed", "normalisation", "frequency", "clean_accuracy", "accuracy_drop"])
    fig = pk.pk_noise_figure(table, NOISE_DECIDES)
    marked = [ax for ax in fig.axes if "(verdict)" in ax.get_title()]
    assert len(marked) == 1 and marked[0].get_title().startswith(pk.NOISE_NORMALISATIONS[NOISE_DECIDES])
    assert {float(y) for line in marked[0].lines for y in line.get_ydata()} == {drops[NOISE_DECIDES]}
    path = tmp_path / table_path("noise")
    path.parent.mkdir(parents=True)
    table.to_csv(path, index=False)
    pk5 = next(claim for claim in PAPER.claims if claim.id == "PK-5")
    assert {drop for units in pk5.samples(tmp_path).values() for unit in units for _, drop in unit.values()} \
        == {drops[NOISE_DECIDES]}, "the claim decides on another normalisation than the figure marks"


def test_phase_scaling_title_fits_the_figure():
    summary = {model: {"n_min": {"0.1": 20, "0.2": 8}, "steps": {"0.1": 400, "0.2": 100}, "n_min_exponent": 1.5,
                       "steps_exponent": 2.0, "n_min_censored": []} for model in ("vit", "cnn")}
    fig = li.scaling_figure(summary, "default")
    fig.canvas.draw()
    title = fig._suptitle.get_window_extent(fig.canvas.get_renderer())
    assert fig.bbox.x0 <= title.x0 and title.x1 <= fig.bbox.x1, (title, fig.bbox)


def test_sparsify_draws_each_strategy_apart_without_overlapping_bands(tmp_path):
    rng = np.random.default_rng(RNG_SEED)
    runs = pd.DataFrame([(strategy, keep, seed, rng.uniform(0.2, 1.0))
                         for strategy in ("none", *li.STRATEGY_COLOURS) for keep in (0.25, 0.5, 0.75)
                         for seed in SEEDS], columns=["strategy", "keep_ratio", "seed", "test_loss"])
    fig = li.sparsify_figure(runs)
    fig.savefig(tmp_path / "sparsify.png")
    for ax, strategies in zip(fig.axes, li.STRATEGY_PANELS.values(), strict=True):
        colours = {line.get_label(): line.get_color() for line in ax.lines if line.get_label() in strategies}
        assert set(colours) == set(strategies)
        assert nearest_pair(colours)[0] >= LEAST_COLOUR_DISTANCE, nearest_pair(colours)
        bands = [c for c in ax.collections if type(c).__name__ in ("PolyCollection", "FillBetweenPolyCollection")]
        assert not bands, "seeds drawn as overlapping bands"


def test_the_association_maps_show_the_median_seed_and_the_best_not_seed_0():
    """JSL-2's figure: seed 0 meets Definition 2.2 but the typical seed does not, so the maps show the seed of
    median share (a diverged seed left out of the choice, counted in the total) and the best beside it."""
    shares = [1.0, 0.5, 0.9, 0.8, 0.7]
    runs = {"final": [{"pos_exact": share} for share in shares], "unstable": [False, False, False, False, True]}
    gram = {"initial": torch.arange(5.0)[:, None, None] * torch.ones(5, 4, 4),
            "final": -torch.arange(5.0)[:, None, None] * torch.ones(5, 4, 4)}
    panels, meeting = jsl.association_panels(gram, runs)
    assert [title for title, _ in panels] == ["at initialisation (seed 3)",
                                              "after training, median seed 3: 80% of patches meet their set",
                                              "after training, best seed 0: 100%"]
    assert [maps[0, 0] for _, maps in panels] == [3.0, -3.0, 0.0]
    assert meeting == "1 of 5 seeds meet Definition 2.2 on P Pᵀ (every patch)"
    panels, meeting = jsl.association_panels(gram, dict(runs, unstable=[True] * 5))
    assert len(panels) == 1 and meeting.endswith("every seed unstable")


@pytest.mark.parametrize(("scores", "seed"), [({0: 0.229, 1: 0.153, 2: 0.212, 3: 0.193, 4: 0.257, 5: 0.146}, 3),
                                              ({0: 0.3, 1: 0.1, 2: 0.2}, 2), ({4: 1.0, 2: 1.0, 7: 0.0}, 2)])
def test_a_figures_typical_seed_is_the_lower_median_ties_to_the_lower_seed(scores, seed):
    """JSL-5's maps at committed scores: seed 0 (0.229) sits above the median, seed 3 is the lower median."""
    assert jsl.median_seed(scores) == seed
