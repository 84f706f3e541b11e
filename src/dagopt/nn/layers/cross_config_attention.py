"""Cross-configuration attention of TGraph (paper 002, section 2.3.2, eq. 6).

``A_cross(x)[b, i] = x[b, i] * softmax_b(x[b, i] / T)``: for each node ``i`` and channel,
a softmax over the configuration axis ``b`` of the batch, with a learned temperature
``T``, weights each configuration's features, so every configuration is scored in the
company of the others. The output therefore depends on which configurations share a
batch (inference averages over permuted batches, section 2.5.3).
"""

import torch
from torch import nn


class CrossConfigAttention(nn.Module):
    """Eq. 6 over axis ``dim`` (the configuration axis, 0 by default)."""

    def __init__(self, temperature: float = 1.0, dim: int = 0) -> None:
        super().__init__()
        self.log_temperature = nn.Parameter(torch.tensor(float(temperature)).log())
        self.dim = dim

    @property
    def temperature(self) -> torch.Tensor:
        """``T = exp(log T)``: learned, always positive."""
        return self.log_temperature.exp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.softmax(x / self.temperature, dim=self.dim)
