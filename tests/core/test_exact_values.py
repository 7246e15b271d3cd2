"""Every ensemble's 0-1 error (LI-1, LI-2, LI-4, LI-6, JSL-1 to JSL-4) counted exactly on a planted record
(issue 66 item 7): each member's mistakes over its own first n rows, the padding past n never counted."""

import pytest
import torch
from torch import nn

from vitheory.core.ensemble import loss_and_error


class _Outputs(nn.Module):
    """An ensemble stand-in whose outputs are its inputs (loss_and_error reads only the forward)."""

    def forward(self, x: torch.Tensor, members: torch.Tensor | None = None) -> torch.Tensor:
        return x


def test_each_members_error_is_its_mistakes_over_its_own_rows():
    """Member 0: 1 mistake in its 3 rows; member 1: 2 in its 5 (a NaN among them); the padding past each n is
    wrong on purpose: counted, or divided by the 5 rows, it would give 3/5 or 1/5."""
    out = torch.tensor([[1.0, -1.0, 1.0, -1.0, -1.0], [1.0, float("nan"), 1.0, -1.0, 1.0]])
    y = torch.tensor([[1.0, 1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0, 1.0]])
    _, error = loss_and_error(_Outputs(), out, y, n=torch.tensor([3, 5]))
    assert error.tolist() == pytest.approx([1 / 3, 2 / 5], rel=1e-6)  # float32
