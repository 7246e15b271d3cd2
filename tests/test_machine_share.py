"""benchmarks.machine_share's FLOPs (torch's FlopCounterMode on a step's forward and backward) against the
count from the default models' shapes: 2 m n k per matmul, 2 Cin Cout kh kw Hout Wout per convolution and
image, the backward twice the forward but for the first layer, whose input (the images) needs no gradient."""

from functools import partial

import torch

from benchmarks.image_trainer import flops_per_image
from vitheory.images.training import build_model

SIDE, CHANNELS, CLASSES = 16, 1, 10  # the default cluttered canvas


def step_flops(forward: float, first_layer: float) -> float:
    """Forward, then input and weight gradients (2x), less the first layer's input gradient."""
    return 3 * forward - first_layer


def images(n: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(n, CHANNELS, SIDE, SIDE), torch.arange(n) % CLASSES


def test_the_vits_step_counts_its_linear_layers_and_attention_matmuls(default_params):
    vit = default_params.real.models.vit
    patches, w = (SIDE // vit.patch) ** 2, vit.width
    tokens = patches + 1  # the class token
    embed = 2 * patches * vit.patch ** 2 * CHANNELS * w
    block = 2 * (tokens * w * 2 * w + 2 * tokens * w * w  # query and key, value, output projections
                 + 2 * tokens * tokens * w                # QK^T and AV over all heads
                 + 2 * tokens * w * vit.mlp_ratio * w)    # the MLP's two layers
    forward = embed + vit.depth * block + 2 * w * CLASSES  # the head reads the class token
    assert flops_per_image(partial(build_model, vit, SIDE, CHANNELS, CLASSES), *images()) == step_flops(forward, embed)


def test_the_cnns_step_counts_its_convolutions(default_params):
    cnn = default_params.real.models.cnn
    stem = 2 * CHANNELS * cnn.widths[0] * 9 * SIDE ** 2
    forward, side, c_in = stem, SIDE, cnn.widths[0]
    for stage, (width, count) in enumerate(zip(cnn.widths, cnn.blocks)):
        for i in range(count):
            stride = 2 if stage > 0 and i == 0 else 1
            side //= stride
            forward += 2 * (c_in * width * 9 + width * width * 9) * side ** 2
            if stride > 1 or c_in != width:  # the 1 x 1 projection of the skip
                forward += 2 * c_in * width * side ** 2
            c_in = width
    forward += 2 * c_in * CLASSES
    assert flops_per_image(partial(build_model, cnn, SIDE, CHANNELS, CLASSES), *images()) == step_flops(forward, stem)
