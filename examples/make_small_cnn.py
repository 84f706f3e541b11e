"""Write ``src/dagopt/data/small-cnn.onnx``, the ONNX model ``dagopt examples`` ships
(``--out FILE``: elsewhere, to compare with the shipped one).

    python examples/make_small_cnn.py

A small two-branch residual CNN (stem, two residual blocks whose second one has a
1x1 projection branch, global pooling, classifier) with random weights (seed 0), input
1 x 3 x 32 x 32, exported with torch's ONNX exporter. It is small enough to ship
(tens of KB) and branched enough that execution orders differ in peak memory.
"""

import argparse
from pathlib import Path

import torch
from torch import nn

OUT = Path(__file__).resolve().parents[1] / "src" / "dagopt" / "data" / "small-cnn.onnx"


class Block(nn.Module):
    """``relu(conv(relu(conv(x))) + shortcut(x))``; the shortcut projects when shapes change."""

    def __init__(self, channels_in: int, channels_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels_in, channels_out, 3, stride=stride, padding=1)
        self.conv2 = nn.Conv2d(channels_out, channels_out, 3, padding=1)
        self.shortcut = (
            nn.Identity()
            if stride == 1 and channels_in == channels_out
            else nn.Conv2d(channels_in, channels_out, 1, stride=stride)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv1(x))
        return torch.relu(self.conv2(y) + self.shortcut(x))


def small_cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        Block(16, 16, 1),
        Block(16, 32, 2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, 10),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="default: the shipped file")
    out = parser.parse_args().out
    torch.manual_seed(0)
    model = small_cnn().eval()
    torch.onnx.export(model, (torch.randn(1, 3, 32, 32),), out, dynamo=False)
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
