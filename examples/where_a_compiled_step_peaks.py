"""Where a ``torch.compile``d training step reaches its peak memory, and what changes it.

python examples/where_a_compiled_step_peaks.py

A small convolutional classifier (3 x 3 convolutions, random weights) is trained for one
step on the CPU, compiled by ``torch.compile`` twice: with its weights as built
(contiguous) and converted to channels-last (``channels_last_weights``). For each,
``peak_site`` (``dagopt.integrations.torch_compile``) measures the step's peak by the
CPU allocator's reports and says where the step was then (a backward graph, another
compiled graph, autograd's gradient accumulation, or outside them; and the ATen
operator running) and which gradients autograd copied into their weights' layouts:
Inductor runs convolutions channels-last and returns their weights' gradients so, and
contiguous weights need a copy of each (docs/results.md, "Where a compiled training
step peaks, and channels-last weights").
"""

import torch
from torch import nn

from dagopt.integrations.torch_compile import channels_last_weights, peak_site, training_step


def classifier() -> nn.Module:
    """Four 3 x 3 convolutions with ReLU, global pooling and a linear head."""
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for channels_in, channels_out in ((3, 32), (32, 64), (64, 128), (128, 128)):
        layers += [nn.Conv2d(channels_in, channels_out, 3, padding=1), nn.ReLU()]
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))


images = (torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1)),)
for layout in ("contiguous", "channels-last"):
    model = classifier()
    if layout == "channels-last":
        channels_last_weights(model)
    torch._dynamo.reset()
    step = training_step(model, images)
    step()  # the first call compiles
    model.zero_grad(set_to_none=True)
    site = peak_site(step)
    where = f"{site.region}, {site.operator}" if site.operator else site.region
    copies = site.gradient_copies
    print(
        f"{layout}: peak {site.peak / 1e6:.3f} MB in {where}; gradient copies: "
        f"{len(copies)} ({sum(copies) / 1e6:.3f} MB)"
    )
