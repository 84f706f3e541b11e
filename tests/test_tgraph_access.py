"""TGraph's operand-access features (``dagopt.nn.tgraph.access``) on a program written by
the measured dataset's own writer: a stride-2 convolution, a reshape and a dot."""

import numpy as np
import pytest
import torch

from dagopt.errors import InputError
from dagopt.integrations.tvm.layout import LayoutGraph, LayoutOp
from dagopt.nn.tgraph.access import ACCESS_FEATURES, access_features
from dagopt.nn.tgraph.config import TGraphConfig
from dagopt.rank.configs.layout import layout_record
from dagopt.rank.tgraph import prepare

GRAPH = LayoutGraph(
    "conv-reshape-dot",
    (
        LayoutOp("parameter", (1, 4, 8, 8)),
        LayoutOp("parameter", (6, 4, 2, 2)),
        LayoutOp("convolution", (1, 6, 4, 4), (0, 1), stride=2),
        LayoutOp("reshape", (6, 16), (2,)),
        LayoutOp("parameter", (3, 6)),
        LayoutOp("dot", (3, 16), (4, 3), spec="nc,cp->np"),
    ),
)
ROW_MAJOR = (3, 2, 1, 0)
# per configurable node: (output, first operand, kernel) minor-to-major orders
CONFIGS = [
    (  # everything row-major: the convolution's minor x strides over the data's minor w
        (ROW_MAJOR, ROW_MAJOR, ROW_MAJOR),
        ((1, 0), ROW_MAJOR, ()),
        ((1, 0), (1, 0), ()),
    ),
    (  # output channels minor; data and kernel copied; the dot's result converted back
        ((1, 3, 2, 0), (1, 0, 2, 3), (0, 3, 2, 1)),
        ((0, 1), (1, 3, 2, 0), ()),
        ((0, 1), (0, 1), ()),
    ),
]
NONE = (0, 0, 0, 0, 0, 0)
# per operand slot: contiguous, gathered, broadcast, reduction-minor, copy contiguous,
# copy gathered; then the root's result copy
EXPECTED = [
    [
        [*(0, 1, 0, 1, 0, 0), *(0, 0, 1, 1, 0, 0), 0],  # stride 2: gathered though minor
        [*(1, 0, 0, 0, 0, 0), *NONE, 0],  # pixels minor walk the conv's minor x
        [0] * ACCESS_FEATURES,  # a dot's dimension mapping is not in TpuGraphs' features
    ],
    [
        [*(0, 0, 1, 0, 0, 1), *(1, 0, 0, 0, 0, 1), 0],
        [*(1, 0, 0, 0, 0, 0), *NONE, 0],  # channels minor walk the conv's channels
        [*(0, 0, 0, 0, 0, 1), *NONE, 1],  # the weight copied; the result converted
    ],
]


def test_access_features_follow_the_emitters_loops():
    record = layout_record(GRAPH, CONFIGS, np.array([1, 2]))
    graph = prepare(record)
    got = access_features(graph.tensors, graph.configs(np.arange(2)))
    torch.testing.assert_close(got, torch.tensor(EXPECTED, dtype=torch.float32))


@pytest.mark.parametrize("option", ["physical_layout", "access_pattern"])
def test_layout_options_are_layout_tgraph_options(option):
    with pytest.raises(InputError, match=option):
        TGraphConfig(kind="tile", **{option: True})
    with pytest.raises(InputError, match=option):
        TGraphConfig(architecture="tpugraphs-baseline", **{option: True})
