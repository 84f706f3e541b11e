"""The immutable computation-graph model every solver works on."""

from dagopt.errors import GraphError
from dagopt.graph.bitset import bits_to_bool, num_words
from dagopt.graph.core import Graph, NodeId
from dagopt.graph.order import validate_order

__all__ = ["Graph", "GraphError", "NodeId", "bits_to_bool", "num_words", "validate_order"]
