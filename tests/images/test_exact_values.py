"""Every real-image accuracy (JSL-5, JSL-6, LI-5, PK-1, PK-6, PK-7; pk_train's errors are its complement)
counted exactly on a planted record (issue 66 item 7): every batch's mistakes, the last partial one included."""

import torch
from torch import nn

from vitheory.images.training import evaluate


def test_the_accuracy_counts_every_example_across_uneven_batches():
    """7 examples in batches of 3, 3 and 1, one mistake in each batch, the last alone in its batch: 4 / 7 (a
    dropped last batch gives 4 / 6, a mean of the batches' accuracies (2/3 + 2/3 + 0) / 3)."""
    logits = torch.tensor([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [2.0, 0.0], [2.0, 0.0], [0.0, 2.0], [0.0, 2.0]])
    labels = torch.tensor([0, 0, 0, 1, 0, 1, 0])
    assert evaluate(nn.Identity(), logits, labels, batch_size=3)["accuracy"] == 4 / 7
