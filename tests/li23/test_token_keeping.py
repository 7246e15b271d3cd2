"""LI-5's pieces: choosing the tokens to keep, the attention scores behind the choice, the spurious marker."""

import copy
import math
from dataclasses import replace

import pytest
import torch
from conftest import ROOT
from torch import nn

from vitheory.images.models import SmallViT, patchify
from vitheory.images.training import build_model, evaluate
from vitheory.li23 import token_keeping
from vitheory.li23.token_keeping import (
    STRATEGIES,
    add_marker,
    choose,
    finetune_sparsified,
    marker_classes,
    marker_positions,
    natural_runs,
    sparsified_accuracy,
    spurious_data,
    spurious_runs,
    token_scores,
    without_token,
)
from vitheory.params import load_params

PARAMS = load_params(ROOT / "params.yaml")
VIT = PARAMS.real.models.vit
# one bright 2 x 2 patch per image (row-major patch index) on an otherwise black 8 x 8 image, 16 patches
BRIGHT = [3, 0, 15, 9, 6]


def bright_images(where: list[int]) -> torch.Tensor:
    x = torch.zeros(len(where), 1, 8, 8)
    for i, patch in enumerate(where):
        row, col = divmod(patch, 4)
        x[i, 0, 2 * row:2 * row + 2, 2 * col:2 * col + 2] = 1.0
    return x


def planted_vit(pool: str) -> SmallViT:
    """A one-layer, one-head ViT (width 4) whose attention provably peaks on the bright patch.

    All weights zero but: the embedding sums a patch's pixels into coordinate 0, the class token is e_1,
    the first LayerNorm is the identity map after normalising. Normalised, a bright patch is
    u = (3, -1, -1, -1) / sqrt 3, the class token v = (-1, 3, -1, -1) / sqrt 3, a black patch 0. Queries
    are 3 w (u + v)^T x and keys w w^T x with w = (1, 0, 0, -1), which is orthogonal to v: only a bright
    key scores, s = 3 (u + v).v (w.u) |w|^2 / sqrt(4) = 32 / sqrt 3 from the class token or a bright query;
    a black query has q = 0 and looks everywhere alike."""
    model = SmallViT(image_size=8, channels=1, n_classes=2, patch=2, depth=1, heads=1, width=4, mlp_ratio=1,
                     attention="vanilla", pool=pool)
    u = torch.tensor([3.0, -1, -1, -1]) / math.sqrt(3)
    v = torch.tensor([-1.0, 3, -1, -1]) / math.sqrt(3)
    w = torch.tensor([1.0, 0, 0, -1])
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        model.blocks[0].norm1.weight.fill_(1.0)
        model.embed.weight[0] = 1.0
        if pool == "cls":
            model.cls[0, 0, 1] = 1.0
        model.blocks[0].attn.qk.weight[:4] = 3 * torch.outer(w, u + v)
        model.blocks[0].attn.qk.weight[4:] = torch.outer(w, w)
    return model


class KeptBrightness(nn.Module):
    """Says class 1 when a bright patch is among the tokens it keeps, class 0 when not: an image
    classifier whose accuracy on all-class-1 images is the share of images that kept their bright patch."""

    def forward(self, images: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        patches = patchify(images, 2)
        if keep is not None:
            patches = patches.gather(1, keep[..., None].expand(-1, -1, patches.shape[-1]))
        bright = patches.amax(dim=(1, 2))
        return torch.stack([1 - bright, bright], dim=1)


def test_token_choice_by_strategy():
    scores = torch.tensor([[0.1, 0.5, 0.2, 0.9], [0.8, 0.1, 0.3, 0.2]])
    generator = torch.Generator().manual_seed(0)
    assert choose(scores, 2, "attention", generator).tolist() == [[1, 3], [0, 2]]
    assert choose(scores, 2, "lowest", generator).tolist() == [[0, 2], [1, 3]]
    random = choose(scores, 3, "random", generator)
    assert random.shape == (2, 3) and all(len(set(row.tolist())) == 3 for row in random)


def test_random_keeping_draws_each_image_its_own_tokens():
    """One random subset shared by every image would keep a fixed set of grid positions, not a random
    share of each image's tokens."""
    scores = torch.rand(200, 16, generator=torch.Generator().manual_seed(1))
    keep = choose(scores, 4, "random", torch.Generator().manual_seed(0))
    assert keep.shape == (200, 4) and (keep.diff(dim=1) > 0).all()  # sorted, distinct
    assert len({tuple(row) for row in keep.tolist()}) > 150  # 1820 subsets of 4 of 16: few repeats
    # every patch kept about 4 / 16 of the time: 50 of 200 images (ours: +-20 is > 4 binomial sd's, sd 6.1)
    assert ((torch.bincount(keep.flatten(), minlength=16) - 50).abs() < 20).all()
    # the draw follows the generator, not the scores
    assert torch.equal(keep, choose(-scores, 4, "random", torch.Generator().manual_seed(0)))
    assert not torch.equal(keep, choose(scores, 4, "random", torch.Generator().manual_seed(1)))


@pytest.mark.parametrize("pool", ["cls", "gap"])
def test_token_scores_peak_on_the_token_a_planted_attention_looks_at(pool):
    """The class token's row (query 0), the patches' columns (keys 1..): an argmin or a row or column off
    by one moves the peak off the bright patch. With `gap`, the mean over queries of the patch rows."""
    scores = token_scores(planted_vit(pool), bright_images(BRIGHT), batch_size=2)  # batches of 2, 2 and 1
    assert scores.shape == (5, 16) and scores.argmax(dim=1).tolist() == BRIGHT
    others = ~torch.nn.functional.one_hot(torch.tensor(BRIGHT), 16).bool()
    peak = scores[range(5), BRIGHT]
    if pool == "cls":  # 17 keys, 16 of them score 0: the bright one takes 1 / (1 + 16 e^-s), s = 32 / sqrt 3
        assert peak.tolist() == pytest.approx([1 / (1 + 16 * math.exp(-32 / math.sqrt(3)))] * 5, rel=1e-6)
        assert (scores[others] < 1e-7).all()
    else:  # the bright query puts (almost) all on itself, 15 black queries 1 / 16 on each of 16 keys
        assert peak.tolist() == pytest.approx([(1 + 15 / 16) / 16] * 5, rel=1e-6)
        assert scores[others].tolist() == pytest.approx([15 / 16 / 16] * 75, rel=1e-6)
    # the scores the strategies choose from
    generator = torch.Generator().manual_seed(0)
    assert choose(scores, 1, "attention", generator).flatten().tolist() == BRIGHT
    assert not (choose(scores, 15, "lowest", generator) == torch.tensor(BRIGHT)[:, None]).any()


def test_sparsified_accuracy_keeps_what_the_scorer_attends_to():
    """Images whose bright patch is class 1 evidence: keeping the most attended token keeps it, keeping
    the least attended never does, a random one in 16 does now and then."""
    where = torch.randint(0, 16, (160,), generator=torch.Generator().manual_seed(0)).tolist()
    x, y = bright_images(where), torch.ones(160, dtype=torch.long)
    reader, scorer = KeptBrightness(), planted_vit("cls")
    assert sparsified_accuracy(reader, scorer, x, y, 1, "attention", seed=0) == 1.0
    assert sparsified_accuracy(reader, scorer, x, y, 15, "lowest", seed=0) == 0.0
    random = sparsified_accuracy(reader, scorer, x, y, 1, "random", seed=0)
    assert 0 < random < 0.2  # 1 / 16 = 0.0625 of 160 images: 10 expected (ours: 0 and 32 are > 3 sd's off)
    assert random == sparsified_accuracy(reader, scorer, x, y, 1, "random", seed=0)
    assert random != sparsified_accuracy(reader, scorer, x, y, 1, "random", seed=1)


def _tiny_vit() -> SmallViT:
    return SmallViT(image_size=8, channels=1, n_classes=3, patch=2, depth=1, heads=2, width=8, mlp_ratio=1,
                    attention="vanilla", pool="cls")


def _tiny_data(n: int = 48, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(n, 1, 8, 8, generator=generator), torch.randint(0, 3, (n,), generator=generator)


TRAIN = replace(PARAMS.real, batch_size=16, warmup_epochs=0, shift=0, hflip=False)


def test_finetuning_on_kept_tokens_trains_a_copy_on_those_tokens():
    torch.manual_seed(0)
    model, (x, y) = _tiny_vit(), _tiny_data()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    tuned = finetune_sparsified(model, x, y, TRAIN, k=4, strategy="attention", epochs=1, seed=0)
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())  # the original untouched
    assert not torch.equal(tuned.head.weight, model.head.weight)
    again = finetune_sparsified(model, x, y, TRAIN, k=4, strategy="attention", epochs=1, seed=0)
    assert all(torch.equal(v, again.state_dict()[k]) for k, v in tuned.state_dict().items())  # seeded
    # the tokens kept are the ones trained on: other k, other strategy, other random draws, other weights
    for other in ({"k": 16, "strategy": "attention", "seed": 0}, {"k": 4, "strategy": "lowest", "seed": 0},
                  {"k": 4, "strategy": "random", "seed": 0}):
        changed = finetune_sparsified(model, x, y, TRAIN, epochs=1, **other)
        assert not torch.equal(changed.head.weight, tuned.head.weight), other
    draws = [finetune_sparsified(model, x, y, TRAIN, k=4, strategy="random", epochs=1, seed=s) for s in (0, 1)]
    assert not torch.equal(draws[0].head.weight, draws[1].head.weight)


def test_natural_runs_keep_the_accuracy_when_every_token_is_kept():
    """Rows per model: all tokens, then each k (largest first) by each strategy, before and after the
    fine-tune; keeping all 16 tokens, whatever the strategy, is the model itself."""
    torch.manual_seed(0)
    models = [_tiny_vit().eval()]
    (x_train, y_train), (x_test, y_test) = _tiny_data(32, 0), _tiny_data(64, 1)
    cfg = replace(PARAMS.sparsify_real, keep_tokens=(4, 16, 4), finetune_epochs=1)
    rows = natural_runs(models, {"train": x_train, "test": x_test}, {"train": y_train, "test": y_test}, TRAIN, cfg)
    expected = [(0, strategy, k, tuned) for strategy, k, tuned in
                [("all", 16, 0)] + [(s, k, t) for k in (16, 4) for s in STRATEGIES for t in (0, 1)]]
    assert [(r[3], r[1], r[2], r[4]) for r in rows] == expected and {r[0] for r in rows} == {"natural"}
    everything = evaluate(models[0], x_test, y_test)["accuracy"]
    assert [r[5] for r in rows if r[2] == 16 and r[4] == 0] == [everything] * 4
    tuned = [r[5] for r in rows if r[4] == 1]
    assert all(0 <= a <= 1 for a in tuned)


def test_spurious_runs_name_every_experiment_and_drop_one_token():
    (x_train, y_train), (x_test, y_test) = _tiny_data(48, 0), _tiny_data(64, 1)
    def run() -> list[tuple]:
        return spurious_runs(_tiny_vit, {"train": x_train, "test": x_test}, {"train": y_train, "test": y_test}, TRAIN,
                             seeds=2, epochs=1, correlation=0.5, marker_value=5.0, marker_seed=0, n_classes=3)

    torch.manual_seed(0)
    rows = run()
    torch.manual_seed(1)  # the markers follow marker_seed alone, not the global generator
    assert run() == rows
    assert [r[:5] for r in rows] == [(experiment, strategy, kept, seed, 0) for seed in (0, 1) for experiment, strategy, kept in
                                     [("spurious_clean", "all", 16), ("spurious_correlated", "all", 16),
                                      ("spurious_decorrelated", "all", 16),
                                      ("spurious_decorrelated", "oracle", 15), ("spurious_decorrelated", "attention", 15)]]
    assert all(0 <= r[5] <= 1 for r in rows)


def test_token_scores_are_a_distribution_over_patches_per_image():
    torch.manual_seed(0)
    model = build_model(VIT, 8, 1, 10)
    scores = token_scores(model, torch.randn(5, 1, 8, 8))
    assert scores.shape == (5, 16) and (scores > 0).all() and (scores.sum(1) <= 1 + 1e-5).all()


def test_spurious_marker_sits_on_the_class_patch():
    positions = marker_positions(16, 10, seed=0)
    assert len(set(positions.tolist())) == 10
    x = torch.zeros(2, 1, 8, 8)
    marked = add_marker(x, torch.tensor([0, 3]), positions, 2, 7.0)
    for i, c in enumerate((0, 3)):
        patches = patchify(marked[i:i + 1], 2)[0]
        assert (patches[positions[c]] == 7.0).all() and patches.sum() == 7.0 * 4
    y = torch.arange(10).repeat(100)
    own = marker_classes(y, 0.9, 10, torch.Generator().manual_seed(0)) == y
    assert 0.88 < own.float().mean() < 0.94  # 0.9 plus a tenth of the random draws


def test_spurious_markers_follow_the_class_in_training_and_a_random_class_in_testing():
    n, classes, patch = 600, 4, 2
    y = {"train": torch.arange(classes).repeat(n // classes), "test": torch.arange(classes).repeat(n // classes)}
    x = {split: torch.zeros(n, 1, 8, 8) for split in y}
    train, correlated, test, marker_patch = spurious_data(x, y, patches=16, patch=2, correlation=0.9, marker_value=5.0,
                                              marker_seed=0, n_classes=classes)
    positions = marker_positions(16, classes, 0)
    marked = {split: patchify(images, patch).sum(-1).argmax(1)
              for split, images in (("train", train), ("test", test), ("correlated", correlated))}
    labels = y | {"correlated": y["test"]}
    own = {split: (marked[split] == positions[labels[split]]).float().mean().item() for split in marked}
    assert 0.88 < own["train"] < 0.97  # 0.9 plus a quarter of the random tenth
    assert 0.18 < own["test"] < 0.32  # chance, a quarter: the class no longer predicts the marker
    assert own["correlated"] == 1.0  # every test image its own class's marker
    assert torch.equal(marked["test"], marker_patch)  # the oracle removes the patch that carries it


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: a device bug (seen on an H200 run)")
def test_spurious_marker_takes_images_and_classes_on_the_gpu():
    """sparsify_real keeps images and labels on the training device; the marker positions stay on the CPU."""
    positions = marker_positions(16, 10, seed=0)
    marked = add_marker(torch.zeros(2, 1, 8, 8, device="cuda"), torch.tensor([0, 3], device="cuda"), positions, 2, 7.0)
    assert marked.device.type == "cuda" and marked.sum().item() == 2 * 7.0 * 4


def test_without_token_drops_exactly_the_named_patch():
    kept = without_token(3, 5, torch.tensor([0, 4, 2]))
    assert kept.tolist() == [[1, 2, 3, 4], [0, 1, 2, 3], [0, 1, 3, 4]]


def test_random_finetune_draws_follow_its_seed_not_the_global_generator():
    """The tokens a random fine-tune keeps are the seed's: the same weights whatever the global state."""
    torch.manual_seed(0)
    model, (x, y) = _tiny_vit(), _tiny_data()
    tuned = []
    for global_seed in (0, 1):
        torch.manual_seed(global_seed)
        tuned.append(finetune_sparsified(model, x, y, TRAIN, k=4, strategy="random", epochs=1, seed=0))
    assert all(torch.equal(v, tuned[1].state_dict()[k]) for k, v in tuned[0].state_dict().items())


def test_marker_patches_may_fill_the_image_but_not_more():
    assert sorted(marker_positions(16, 16, seed=0).tolist()) == list(range(16))
    with pytest.raises(ValueError, match="17 classes need as many marker patches; the image has 16"):
        marker_positions(16, 17, seed=0)


def test_marker_rows_count_patches_across_the_width_of_a_wide_image():
    """A 4 x 8 image in 2 x 2 patches has 4 patches per row: patch 5 is row 1, column 1."""
    marked = add_marker(torch.zeros(1, 1, 4, 8), torch.tensor([0]), torch.tensor([5]), 2, 1.0)
    assert marked[0, 0, 2:4, 2:4].eq(1).all() and marked.sum() == 4


def test_uncorrelated_markers_name_every_class_alike_and_follow_their_generator():
    y = torch.zeros(4000, dtype=torch.long)
    markers = marker_classes(y, 0.0, 4, torch.Generator().manual_seed(0))
    assert ((torch.bincount(markers, minlength=4) - 1000).abs() < 120).all()  # binomial sd 27: ours > 4 sd's
    torch.manual_seed(1)
    half = marker_classes(y, 0.5, 4, torch.Generator().manual_seed(0))
    torch.manual_seed(2)
    assert torch.equal(half, marker_classes(y, 0.5, 4, torch.Generator().manual_seed(0)))


def test_spurious_runs_test_without_the_marker_patch_and_without_the_most_attended_patch(monkeypatch):
    """Black images but for the marker: the oracle's rows drop each image's brightest patch (its marker),
    attention's drop the patch the trained model attends to most; the others keep every patch, and the
    correlated images carry each image's own class's marker."""
    seen = []

    def recording(model, images, labels, keep=None):
        seen.append((model, images, keep))
        return evaluate(model, images, labels) if keep is None else evaluate(model, images, labels, keep=keep)

    monkeypatch.setattr(token_keeping, "evaluate", recording)
    y = {split: torch.randint(0, 3, (n,), generator=torch.Generator().manual_seed(n)) for split, n in
         (("train", 48), ("test", 64))}
    x = {split: torch.zeros(len(labels), 1, 8, 8) for split, labels in y.items()}
    rows = spurious_runs(_tiny_vit, x, y, TRAIN, seeds=1, epochs=1, correlation=0.5, marker_value=5.0, marker_seed=0,
                         n_classes=3)
    assert [r[1] for r in rows] == ["all", "all", "all", "oracle", "attention"] and len(seen) == 5
    (_, clean, keep_clean), (_, correlated, keep_own), (_, _, keep_all), (_, marked, oracle), (model, _, attention) = seen
    assert keep_clean is None and keep_own is None and keep_all is None and clean.eq(0).all()
    own_marker = patchify(correlated, 2).sum(-1).argmax(1)
    assert torch.equal(own_marker, marker_positions(16, 3, 0)[y["test"]])
    marker = patchify(marked, 2).sum(-1).argmax(1)
    assert torch.equal(oracle, without_token(64, 16, marker))
    assert torch.equal(attention, without_token(64, 16, token_scores(model, marked).argmax(1)))


def test_natural_runs_score_every_strategy_with_the_original_attention_and_fine_tune_at_its_rate(monkeypatch):
    """Each strategy reaches the token choice by name, before and after a fine-tune at `finetune_lr`."""
    accuracy, finetune = [], []

    def recording_accuracy(model, scorer, x, y, k, strategy, seed):
        accuracy.append((model is scorer, k, strategy, seed))
        return 0.5

    def recording_finetune(model, x, y, cfg, *, k, strategy, epochs, seed):
        finetune.append((cfg, k, strategy, epochs, seed))
        return copy.deepcopy(model)

    monkeypatch.setattr(token_keeping, "sparsified_accuracy", recording_accuracy)
    monkeypatch.setattr(token_keeping, "finetune_sparsified", recording_finetune)
    (x_train, y_train), (x_test, y_test) = _tiny_data(32, 0), _tiny_data(64, 1)
    cfg = replace(PARAMS.sparsify_real, keep_tokens=(4,), finetune_epochs=3, finetune_lr=PARAMS.real.lr / 7)
    natural_runs([_tiny_vit().eval()] * 2, {"train": x_train, "test": x_test}, {"train": y_train, "test": y_test},
                 TRAIN, cfg)
    assert accuracy == [(tuned_is_original, 4, strategy, seed) for seed in (0, 1) for strategy in STRATEGIES
                        for tuned_is_original in (True, False)]
    assert [entry[1:] for entry in finetune] == [(4, strategy, 3, seed) for seed in (0, 1) for strategy in STRATEGIES]
    assert all(entry[0] == replace(TRAIN, lr=cfg.finetune_lr) for entry in finetune)
