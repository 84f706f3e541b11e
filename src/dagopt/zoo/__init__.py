"""Model zoo: real architectures from ``transformers`` configs with random weights, as graphs.

``MODELS`` is the catalogue (``docs/zoo.md``); ``export_zoo_graph(name, size=, mode=)``
exports one model through ``dagopt.io.torch.graph_from_module`` and caches the graph.
Importing this package imports neither torch nor transformers.
"""

from dagopt.zoo.export import (
    ZooExport,
    ZooModule,
    build_zoo_module,
    cache_path,
    cache_root,
    export_zoo,
    export_zoo_graph,
    parse_zoo_key,
    read_cached,
)
from dagopt.zoo.models import HELD_OUT_MODELS, MODELS, SIZES, ZooModel, get_model, model_names

__all__ = [
    "HELD_OUT_MODELS",
    "MODELS",
    "SIZES",
    "ZooExport",
    "ZooModel",
    "ZooModule",
    "build_zoo_module",
    "cache_path",
    "cache_root",
    "export_zoo",
    "export_zoo_graph",
    "get_model",
    "model_names",
    "parse_zoo_key",
    "read_cached",
]
