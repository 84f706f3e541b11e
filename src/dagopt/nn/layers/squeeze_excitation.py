"""Channel-wise self-attention of TGraph (paper 002, section 2.3.1, eq. 5).

``A_self(x) = x * sigmoid(f_squeeze(ReLU(f_excitation(x))))``: a linear bottleneck
(``reduction``-fold fewer channels, 8 in the paper), ReLU, a linear layer back to the
channel count, a sigmoid gate multiplied into the input, per node and configuration
(as Squeeze-and-Excitation, Hu et al. 2018, without the spatial pooling).
"""

import torch
from torch import nn


class SqueezeExcitation(nn.Module):
    """Eq. 5 on the last axis of any tensor ``(..., channels)``."""

    def __init__(self, channels: int, reduction: int = 8) -> None:
        super().__init__()
        hidden = max(1, channels // reduction)
        self.excitation = nn.Linear(channels, hidden)
        self.squeeze = nn.Linear(hidden, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(self.squeeze(torch.relu(self.excitation(x))))
