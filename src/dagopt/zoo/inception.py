"""Inception-V3 (Szegedy et al., "Rethinking the Inception Architecture for Computer
Vision", CVPR 2016), written from its published layer configuration: paper 004 places
it, and torchvision's PyPI wheel (a CUDA build) does not load with the CPU torch.

Layer names, widths and kernels follow the reference implementation's (stem
``Conv2d_1a`` to ``Conv2d_4a``, blocks ``Mixed_5b`` .. ``Mixed_7c`` of the A-E modules);
every convolution is bias-free and followed by batch norm (eps 0.001) and ReLU. The
auxiliary classifier, used only in training, is left out. Input 3 x 299 x 299.
"""

import torch
from torch import nn


class BasicConv2d(nn.Sequential):
    """``ReLU(BN(Conv(x)))`` with a bias-free convolution."""

    def __init__(self, c_in: int, c_out: int, kernel, stride=1, padding=0) -> None:
        super().__init__(
            nn.Conv2d(c_in, c_out, kernel, stride=stride, padding=padding, bias=False),
            nn.BatchNorm2d(c_out, eps=0.001),
            nn.ReLU(inplace=False),
        )


class Branches(nn.Module):
    """Parallel branches whose outputs are concatenated along the channels."""

    def __init__(self, *branches: nn.Module) -> None:
        super().__init__()
        self.branches = nn.ModuleList(branches)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([branch(x) for branch in self.branches], dim=1)


def _seq(*layers: nn.Module) -> nn.Sequential:
    return nn.Sequential(*layers)


def _avg_pool_conv(c_in: int, c_out: int) -> nn.Sequential:
    return _seq(nn.AvgPool2d(3, stride=1, padding=1), BasicConv2d(c_in, c_out, 1))


def inception_a(c_in: int, pool: int) -> Branches:
    """35 x 35 module: 1x1, 5x5, double 3x3, pooled branches."""
    return Branches(
        BasicConv2d(c_in, 64, 1),
        _seq(BasicConv2d(c_in, 48, 1), BasicConv2d(48, 64, 5, padding=2)),
        _seq(BasicConv2d(c_in, 64, 1), BasicConv2d(64, 96, 3, padding=1),
             BasicConv2d(96, 96, 3, padding=1)),
        _avg_pool_conv(c_in, pool),
    )  # fmt: skip


def inception_b(c_in: int) -> Branches:
    """Grid reduction 35 -> 17."""
    return Branches(
        BasicConv2d(c_in, 384, 3, stride=2),
        _seq(BasicConv2d(c_in, 64, 1), BasicConv2d(64, 96, 3, padding=1),
             BasicConv2d(96, 96, 3, stride=2)),
        nn.MaxPool2d(3, stride=2),
    )  # fmt: skip


def inception_c(c_in: int, c7: int) -> Branches:
    """17 x 17 module with factorised 7x7 convolutions (1x7 then 7x1)."""
    row, col = dict(kernel=(1, 7), padding=(0, 3)), dict(kernel=(7, 1), padding=(3, 0))
    return Branches(
        BasicConv2d(c_in, 192, 1),
        _seq(BasicConv2d(c_in, c7, 1), BasicConv2d(c7, c7, **row), BasicConv2d(c7, 192, **col)),
        _seq(BasicConv2d(c_in, c7, 1), BasicConv2d(c7, c7, **col), BasicConv2d(c7, c7, **row),
             BasicConv2d(c7, c7, **col), BasicConv2d(c7, 192, **row)),
        _avg_pool_conv(c_in, 192),
    )  # fmt: skip


def inception_d(c_in: int) -> Branches:
    """Grid reduction 17 -> 8."""
    return Branches(
        _seq(BasicConv2d(c_in, 192, 1), BasicConv2d(192, 320, 3, stride=2)),
        _seq(BasicConv2d(c_in, 192, 1), BasicConv2d(192, 192, (1, 7), padding=(0, 3)),
             BasicConv2d(192, 192, (7, 1), padding=(3, 0)), BasicConv2d(192, 192, 3, stride=2)),
        nn.MaxPool2d(3, stride=2),
    )  # fmt: skip


def _split(c_in: int) -> Branches:
    """The expanded filter bank of the 8 x 8 module: 1x3 and 3x1 side by side."""
    return Branches(
        BasicConv2d(c_in, 384, (1, 3), padding=(0, 1)),
        BasicConv2d(c_in, 384, (3, 1), padding=(1, 0)),
    )


def inception_e(c_in: int) -> Branches:
    """8 x 8 module with expanded filter banks."""
    return Branches(
        BasicConv2d(c_in, 320, 1),
        _seq(BasicConv2d(c_in, 384, 1), _split(384)),
        _seq(BasicConv2d(c_in, 448, 1), BasicConv2d(448, 384, 3, padding=1), _split(384)),
        _avg_pool_conv(c_in, 192),
    )


def inception_v3(num_classes: int = 1000) -> nn.Sequential:
    """Inception-V3 without its auxiliary classifier: ``(B, 3, 299, 299)`` -> logits."""
    return nn.Sequential(
        BasicConv2d(3, 32, 3, stride=2),  # Conv2d_1a_3x3
        BasicConv2d(32, 32, 3),  # Conv2d_2a_3x3
        BasicConv2d(32, 64, 3, padding=1),  # Conv2d_2b_3x3
        nn.MaxPool2d(3, stride=2),
        BasicConv2d(64, 80, 1),  # Conv2d_3b_1x1
        BasicConv2d(80, 192, 3),  # Conv2d_4a_3x3
        nn.MaxPool2d(3, stride=2),
        inception_a(192, 32),  # Mixed_5b
        inception_a(256, 64),  # Mixed_5c
        inception_a(288, 64),  # Mixed_5d
        inception_b(288),  # Mixed_6a
        inception_c(768, 128),  # Mixed_6b
        inception_c(768, 160),  # Mixed_6c
        inception_c(768, 160),  # Mixed_6d
        inception_c(768, 192),  # Mixed_6e
        inception_d(768),  # Mixed_7a
        inception_e(1280),  # Mixed_7b
        inception_e(2048),  # Mixed_7c
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Dropout(0.5),
        nn.Linear(2048, num_classes),
    )
