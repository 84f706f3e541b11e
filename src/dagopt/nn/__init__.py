"""Neural networks for computation graphs: featurisation and torch modules, no search.

Paper 000 (Gagrani et al., *Neural Topological Ordering for Computation Graphs*):
node features and Laplacian encodings (appendix C.5), the seven Topoformer masks
(section 4.1), Topoformer and the ablation encoders (section 5.3), and the priority
model of eq. (7) and (17); the autoregressive decoder of the appendix-B ablation.
See ``docs/neural.md``.
"""

from dagopt.nn.ar_decoder import ARConfig, ARPolicy
from dagopt.nn.attention import FeedForward, MLPBlock, TopoformerLayer, attention_bias
from dagopt.nn.encoders import (
    KINDS,
    Encoder,
    EncoderConfig,
    GATBlock,
    PriorityModel,
    encoder_inputs,
    normalise_priorities,
)
from dagopt.nn.features import (
    FEATURE_NAMES,
    GraphInputs,
    graph_inputs,
    laplacian_pe,
    node_features,
)
from dagopt.nn.masks import MASK_NAMES, sparse_groups, topological_masks

__all__ = [
    "FEATURE_NAMES",
    "KINDS",
    "MASK_NAMES",
    "ARConfig",
    "ARPolicy",
    "Encoder",
    "EncoderConfig",
    "FeedForward",
    "GATBlock",
    "GraphInputs",
    "MLPBlock",
    "PriorityModel",
    "TopoformerLayer",
    "attention_bias",
    "encoder_inputs",
    "graph_inputs",
    "laplacian_pe",
    "node_features",
    "normalise_priorities",
    "sparse_groups",
    "topological_masks",
]
