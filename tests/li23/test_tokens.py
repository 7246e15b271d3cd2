from dataclasses import replace

import pytest
import torch

from vitheory.core.errors import ArtifactError
from vitheory.li23 import tokens
from vitheory.li23.tokens import CONFUSION, IRRELEVANT, RELEVANT


@pytest.fixture(scope="module")
def splits(default_params):
    return tokens.generate(default_params.generate.li_tokens)


def test_exact_token_counts_per_kind(default_params, splits):
    cfg = default_params.generate.li_tokens
    for data in splits:
        assert ((data.kind == RELEVANT).sum(1) == round(cfg.alpha_star * cfg.n_tokens)).all()
        assert ((data.kind == CONFUSION).sum(1) == round(cfg.alpha_confusion * cfg.n_tokens)).all()
        assert data.X.shape == (len(data), cfg.n_tokens, cfg.dim) and data.X.dtype == torch.float32
        assert data.kind.dtype == torch.int8


def test_patterns_are_orthonormal(splits):
    patterns = splits[0].patterns.double()
    assert torch.allclose(patterns @ patterns.T, torch.eye(len(patterns), dtype=torch.float64), atol=1e-6)


def test_each_token_is_its_kinds_pattern_plus_bounded_noise(default_params, splits):
    tau = default_params.generate.li_tokens.noise_radius
    for data in splits:
        own = torch.where(data.y > 0, 0, 1)  # mu+ is pattern 0, mu- pattern 1
        # the nearest pattern of every token, given noise norm < 1/2 and orthonormal patterns
        nearest = (data.X @ data.patterns.T).argmax(-1)
        assert (nearest[data.kind == RELEVANT] == own[:, None].expand_as(nearest)[data.kind == RELEVANT]).all()
        assert (nearest[data.kind == CONFUSION] == (1 - own)[:, None].expand_as(nearest)[data.kind == CONFUSION]).all()
        assert (nearest[data.kind == IRRELEVANT] >= 2).all()
        noise = data.X - data.patterns[nearest]
        assert torch.allclose(noise.norm(dim=-1), data.noise_norm, atol=1e-5)
        assert (data.noise_norm <= tau + 1e-6).all()


def test_irrelevant_patterns_are_drawn_uniformly(splits):
    data = splits[0]
    nearest = (data.X @ data.patterns.T).argmax(-1)[data.kind == IRRELEVANT]
    counts = torch.bincount(nearest - 2).double()
    expected = counts.sum() / len(counts)
    chi2 = ((counts - expected) ** 2 / expected).sum().item()
    assert chi2 < 50  # 13 degrees of freedom: p < 1e-5 beyond this


def test_sphere_noise_has_norm_exactly_tau(default_params):
    cfg = replace(default_params.generate.li_tokens, noise_dist="sphere", n_train=8, n_test=8)
    train, _ = tokens.generate(cfg)
    assert torch.allclose(train.noise_norm, torch.full_like(train.noise_norm, cfg.noise_radius), atol=1e-6)


def test_labels_are_balanced_and_tokens_shuffled(splits):
    for data in splits:
        assert set(data.y.tolist()) == {-1, 1}
        assert (data.y == 1).sum() * 2 == len(data)
    # token order is random: relevant tokens are not all at the front
    first_relevant = (splits[0].kind == RELEVANT).float().argmax(1)
    assert first_relevant.float().std() > 0


def test_same_seed_same_bytes_other_seed_other_data(default_params, tmp_path):
    cfg = default_params.generate.li_tokens
    for name, seed in [("a", cfg.seed), ("b", cfg.seed), ("c", cfg.seed + 1)]:
        tokens.write(replace(cfg, seed=seed), tmp_path / name)
    same = (tmp_path / "a" / "train.safetensors").read_bytes() == (tmp_path / "b" / "train.safetensors").read_bytes()
    other = (tmp_path / "a" / "train.safetensors").read_bytes() == (tmp_path / "c" / "train.safetensors").read_bytes()
    assert same and not other


def test_round_trip_and_corrupt_file(default_params, splits, tmp_path):
    folder = tmp_path / "data" / "li_tokens"
    tokens.write(default_params.generate.li_tokens, folder)
    loaded = tokens.load_split(folder, "test")
    for name, tensor in splits[1].tensors().items():
        assert torch.equal(getattr(loaded, name), tensor)
    path = folder / "test.safetensors"
    path.write_bytes(path.read_bytes()[:1000])
    # the stage to rerun is found from the path, here the generate stage's data/li_tokens
    with pytest.raises(ArtifactError, match=r"test\.safetensors: not a readable safetensors file.*dvc repro generate`"):
        tokens.load_split(folder, "test")
    with pytest.raises(ArtifactError, match=r"train\.safetensors: missing"):
        tokens.load_split(tmp_path / "absent", "train")
