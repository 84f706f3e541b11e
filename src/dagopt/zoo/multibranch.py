"""Multi-branch CNNs written from their published layer configurations (random weights).

These are the held-out ordering benchmark of issue 21: architectures whose blocks run
several branches side by side (concatenated, added, or split and shuffled), so the order
of the branches decides how many feature maps are live at once. No ordering method was
tuned on them. Each function returns an ``nn.Module`` taking ``(B, 3, H, W)`` images and
returning logits; the widths, depths and kernels are the papers' (cited per function),
classifiers are 1000-way.

- DenseNet-121 (Huang et al., CVPR 2017): every layer reads the concatenation of all
  earlier feature maps of its block;
- SqueezeNet 1.1 (Iandola et al., 2016; the 1.1 revision of its reference code): fire
  modules, a 1x1 squeeze then 1x1 and 3x3 expand branches concatenated;
- ShuffleNet V2 1.0x (Ma et al., ECCV 2018): channel split, two branches, channel shuffle;
- GoogLeNet (Szegedy et al., CVPR 2015): nine Inception (v1) modules of four branches;
  batch norm after every convolution (as in the widely used re-implementations), no
  auxiliary classifiers and no local response normalisation;
- RandWire-WS (Xie et al., ICCV 2019), small regime: three stages whose nodes are wired
  by a Watts-Strogatz graph WS(N, K=4, P=0.75) drawn from a seed; each node sums its
  inputs with learned sigmoid weights, then ReLU - separable 3x3 conv - BN.
"""

import networkx as nx
import numpy as np
import torch
from torch import nn

from dagopt.zoo.inception import BasicConv2d, Branches


def _bn_relu_conv(c_in: int, c_out: int, kernel: int, padding: int = 0) -> nn.Sequential:
    """DenseNet's pre-activation unit: ``Conv(ReLU(BN(x)))`` without bias."""
    return nn.Sequential(
        nn.BatchNorm2d(c_in),
        nn.ReLU(),
        nn.Conv2d(c_in, c_out, kernel, padding=padding, bias=False),
    )


class DenseBlock(nn.Module):
    """``layers`` bottleneck layers (1x1 to ``4 * growth``, 3x3 to ``growth``), each reading
    the concatenation of the block input and every earlier layer's output."""

    def __init__(self, c_in: int, layers: int, growth: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Sequential(
                _bn_relu_conv(c_in + i * growth, 4 * growth, 1),
                _bn_relu_conv(4 * growth, growth, 3, padding=1),
            )
            for i in range(layers)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = [x]
        for layer in self.layers:
            features.append(layer(torch.cat(features, dim=1)))
        return torch.cat(features, dim=1)


def densenet_121(num_classes: int = 1000) -> nn.Sequential:
    """DenseNet-121: growth 32, blocks of 6, 12, 24, 16 layers, compression 0.5."""
    layers: list[nn.Module] = [
        nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(3, stride=2, padding=1),
    ]
    channels = 64
    for index, depth in enumerate((6, 12, 24, 16)):
        layers.append(DenseBlock(channels, depth, 32))
        channels += depth * 32
        if index < 3:  # transition: halve channels and resolution
            layers += [_bn_relu_conv(channels, channels // 2, 1), nn.AvgPool2d(2, stride=2)]
            channels //= 2
    return nn.Sequential(
        *layers,
        nn.BatchNorm2d(channels),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(channels, num_classes),
    )


def _conv_relu(c_in: int, c_out: int, kernel: int, **kwargs) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, kernel, **kwargs), nn.ReLU())


def fire(c_in: int, squeeze: int, expand: int) -> nn.Sequential:
    """SqueezeNet's fire module: 1x1 squeeze, then 1x1 and 3x3 expand branches."""
    return nn.Sequential(
        _conv_relu(c_in, squeeze, 1),
        Branches(_conv_relu(squeeze, expand, 1), _conv_relu(squeeze, expand, 3, padding=1)),
    )


def squeezenet_1_1(num_classes: int = 1000) -> nn.Sequential:
    """SqueezeNet 1.1: a 3x3 stem of 64, eight fire modules, a 1x1 convolutional classifier."""
    pool = nn.MaxPool2d(3, stride=2, ceil_mode=True)
    return nn.Sequential(
        _conv_relu(3, 64, 3, stride=2),
        pool,
        fire(64, 16, 64),
        fire(128, 16, 64),
        nn.MaxPool2d(3, stride=2, ceil_mode=True),
        fire(128, 32, 128),
        fire(256, 32, 128),
        nn.MaxPool2d(3, stride=2, ceil_mode=True),
        fire(256, 48, 192),
        fire(384, 48, 192),
        fire(384, 64, 256),
        fire(512, 64, 256),
        nn.Dropout(0.5),
        _conv_relu(512, num_classes, 1),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
    )


def _conv_bn(c_in: int, c_out: int, kernel: int, stride: int = 1, groups: int = 1) -> list:
    return [
        nn.Conv2d(c_in, c_out, kernel, stride, kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(c_out),
    ]


class ShuffleUnit(nn.Module):
    """ShuffleNet V2 unit: with stride 1 half the channels pass through and half go through
    1x1 - depthwise 3x3 - 1x1; with stride 2 both halves are branches of the whole input.
    The branches are concatenated and the channels shuffled in two groups."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.stride = stride
        half = c_out // 2
        c_branch = c_in if stride == 2 else half
        self.main = nn.Sequential(
            *_conv_bn(c_branch, half, 1),
            nn.ReLU(),
            *_conv_bn(half, half, 3, stride, groups=half),
            *_conv_bn(half, half, 1),
            nn.ReLU(),
        )
        self.side = (
            nn.Sequential(
                *_conv_bn(c_in, c_in, 3, stride, groups=c_in), *_conv_bn(c_in, half, 1), nn.ReLU()
            )
            if stride == 2
            else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.side is None:
            kept, x = x.chunk(2, dim=1)
            out = torch.cat([kept, self.main(x)], dim=1)
        else:
            out = torch.cat([self.side(x), self.main(x)], dim=1)
        b, c, h, w = out.shape
        return out.view(b, 2, c // 2, h, w).transpose(1, 2).reshape(b, c, h, w)


def shufflenet_v2(num_classes: int = 1000) -> nn.Sequential:
    """ShuffleNet V2 1.0x: stages of 4, 8, 4 units with 116, 232, 464 channels."""
    layers: list[nn.Module] = [*_conv_bn(3, 24, 3, 2), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    channels = 24
    for repeats, width in zip((4, 8, 4), (116, 232, 464), strict=True):
        layers.append(ShuffleUnit(channels, width, 2))
        layers += [ShuffleUnit(width, width, 1) for _ in range(repeats - 1)]
        channels = width
    return nn.Sequential(
        *layers,
        *_conv_bn(channels, 1024, 1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(1024, num_classes),
    )


def inception_v1(c_in: int, c1: int, c3r: int, c3: int, c5r: int, c5: int, pool: int) -> Branches:
    """GoogLeNet's Inception module: 1x1, 1x1-3x3, 1x1-5x5 and 3x3 pool-1x1 branches."""
    return Branches(
        BasicConv2d(c_in, c1, 1),
        nn.Sequential(BasicConv2d(c_in, c3r, 1), BasicConv2d(c3r, c3, 3, padding=1)),
        nn.Sequential(BasicConv2d(c_in, c5r, 1), BasicConv2d(c5r, c5, 5, padding=2)),
        nn.Sequential(nn.MaxPool2d(3, stride=1, padding=1), BasicConv2d(c_in, pool, 1)),
    )


def googlenet(num_classes: int = 1000) -> nn.Sequential:
    """GoogLeNet (Table 1 of the paper): modules 3a-3b, 4a-4e, 5a-5b."""
    pool = nn.MaxPool2d(3, stride=2, ceil_mode=True)
    return nn.Sequential(
        BasicConv2d(3, 64, 7, stride=2, padding=3),
        pool,
        BasicConv2d(64, 64, 1),
        BasicConv2d(64, 192, 3, padding=1),
        nn.MaxPool2d(3, stride=2, ceil_mode=True),
        inception_v1(192, 64, 96, 128, 16, 32, 32),  # 3a
        inception_v1(256, 128, 128, 192, 32, 96, 64),  # 3b
        nn.MaxPool2d(3, stride=2, ceil_mode=True),
        inception_v1(480, 192, 96, 208, 16, 48, 64),  # 4a
        inception_v1(512, 160, 112, 224, 24, 64, 64),  # 4b
        inception_v1(512, 128, 128, 256, 24, 64, 64),  # 4c
        inception_v1(512, 112, 144, 288, 32, 64, 64),  # 4d
        inception_v1(528, 256, 160, 320, 32, 128, 128),  # 4e
        nn.MaxPool2d(2, stride=2, ceil_mode=True),
        inception_v1(832, 256, 160, 320, 32, 128, 128),  # 5a
        inception_v1(832, 384, 192, 384, 48, 128, 128),  # 5b
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Dropout(0.4),
        nn.Linear(1024, num_classes),
    )


def watts_strogatz_dag(nodes: int, seed: int, k: int = 4, p: float = 0.75) -> list[list[int]]:
    """RandWire's stage graph: WS(nodes, k, p) with edges directed from the lower to the
    higher node index; entry ``i`` lists the predecessors of node ``i``."""
    graph = nx.connected_watts_strogatz_graph(nodes, k, p, seed=seed)
    preds: list[list[int]] = [[] for _ in range(nodes)]
    for u, v in graph.edges:
        low, high = sorted((u, v))
        preds[high].append(low)
    return [sorted(p) for p in preds]


class RandWireNode(nn.Module):
    """A RandWire node: sigmoid-weighted sum of its inputs, then ReLU - separable 3x3 - BN."""

    def __init__(self, inputs: int, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(inputs))
        self.op = nn.Sequential(
            nn.ReLU(),
            nn.Conv2d(c_in, c_in, 3, stride, 1, groups=c_in, bias=False),
            nn.Conv2d(c_in, c_out, 1, bias=False),
            nn.BatchNorm2d(c_out),
        )

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        weights = torch.sigmoid(self.weights)
        total = inputs[0] * weights[0]
        for weight, x in zip(weights[1:], inputs[1:], strict=True):
            total = total + weight * x
        return self.op(total)


class RandWireStage(nn.Module):
    """One random stage: input nodes (no predecessors) read the stage input with stride 2,
    the output is the mean of the output nodes (no successors)."""

    def __init__(self, preds: list[list[int]], c_in: int, c_out: int) -> None:
        super().__init__()
        self.preds = preds
        has_succ = {u for p in preds for u in p}
        self.outputs = [v for v in range(len(preds)) if v not in has_succ]
        self.nodes = nn.ModuleList(
            RandWireNode(max(len(p), 1), c_out if p else c_in, c_out, 1 if p else 2) for p in preds
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values: list[torch.Tensor] = []
        for node, preds in zip(self.nodes, self.preds, strict=True):
            values.append(node(*[values[u] for u in preds]) if preds else node(x))
        total = values[self.outputs[0]]
        for v in self.outputs[1:]:
            total = total + values[v]
        return total / len(self.outputs)


def randwire_ws(seed: int, num_classes: int = 1000, nodes: int = 32, width: int = 78) -> nn.Module:
    """RandWire-WS, small regime (Xie et al. 2019, Table 1; N = 32, C = 78): ``conv1`` 3x3
    stride 2 to ``C / 2``, ``conv2`` ReLU - 3x3 stride 2 - BN to ``C``, random stages of
    ``N / 2``, ``N``, ``N`` nodes with ``C``, ``2C``, ``4C`` channels (each stage's graph
    drawn from a seed derived from ``seed``), then ReLU - 1x1 conv to 1280 - BN - ReLU,
    global pooling and the classifier."""
    stage_seeds = np.random.default_rng(seed).integers(0, 2**31 - 1, size=3)
    stages = []
    c_in = width
    for index, (stage_nodes, stage_seed) in enumerate(
        zip((nodes // 2, nodes, nodes), stage_seeds, strict=True)
    ):
        c_out = width * 2**index
        stages.append(RandWireStage(watts_strogatz_dag(stage_nodes, int(stage_seed)), c_in, c_out))
        c_in = c_out
    return nn.Sequential(
        nn.Conv2d(3, width // 2, 3, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(width // 2),
        nn.ReLU(),
        nn.Conv2d(width // 2, width, 3, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(width),
        *stages,
        nn.ReLU(),
        nn.Conv2d(c_in, 1280, 1, bias=False),
        nn.BatchNorm2d(1280),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(1280, num_classes),
    )
