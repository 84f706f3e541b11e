"""Export zoo models to ``Graph`` through ``graph_from_module``, with an on-disk cache.

A cached graph is the node-link JSON file ``write_graph_json`` writes, plus a ``"zoo"``
record in its ``"graph"`` attributes (model, size, mode, export seconds, parameter
bytes, versions). Files live under ``<cache>/<versions>/<name>-<size>-<mode>.json``,
where ``<cache>`` is the ``cache_dir`` argument, else ``$DAGOPT_ZOO_CACHE``, else
``~/.cache/dagopt/zoo``, and ``<versions>`` names the dagopt version, the graph format
(``GRAPH_FORMAT``) and the torch and transformers versions: a new version of any of
them exports afresh. Files are written atomically; an unreadable cache file is
exported again and replaced.
"""

import json
import os
import time
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

import dagopt
from dagopt.errors import GraphError, InputError
from dagopt.graph import Graph
from dagopt.io.atomic import write_text_atomic
from dagopt.io.json import graph_from_node_link, graph_to_node_link, read_json_file
from dagopt.zoo.models import check_size, get_model

if TYPE_CHECKING:  # torch is imported only when a model is built
    import torch

    from dagopt.io.torch import TorchGraph

MODES = ("inference", "training")
#: Environment variable that overrides the default cache directory.
CACHE_ENV = "DAGOPT_ZOO_CACHE"
#: Version of what an exported graph holds; bump it when the importer changes what it
#: records, so that older cache files are not read. 2: per-node ``flops``; 3: training
#: graphs without the copies of zero-probability dropouts (``dagopt.io.torch``); 4:
#: autograd-operator training graphs write buffer updates back (``dagopt.io.torch_buffers``);
#: 5: dead operators dropped, views of eval-mode dropouts read as aliases of the input;
#: 6: share nodes marked in the node data (``dagopt.graph.shares``), split outputs the
#: default (joint graphs as in 5).
GRAPH_FORMAT = 6


@dataclass(frozen=True)
class ZooExport:
    """An exported zoo graph and how it was obtained.

    ``seconds`` is the wall time of building the model and exporting it, as measured
    when the graph was exported (also for a cache hit); ``param_bytes`` is the size of
    the distinct parameter, buffer and constant storages the graph reads; ``cached``
    says whether the graph came from the cache file ``path``.
    """

    graph: Graph
    path: Path
    seconds: float
    param_bytes: int
    cached: bool


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """``cache_dir``, else ``$DAGOPT_ZOO_CACHE``, else ``~/.cache/dagopt/zoo``."""
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "dagopt" / "zoo"


def versions() -> dict[str, str]:
    """The versions a cached graph depends on: dagopt, the graph format, torch, transformers."""
    found = {"dagopt": dagopt.__version__, "format": str(GRAPH_FORMAT)}
    for package in ("torch", "transformers"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            raise InputError(f"the model zoo needs {package}: pip install {package}") from None
    return found


def cache_path(
    name: str,
    size: str,
    mode: str,
    cache_dir: str | os.PathLike | None = None,
    *,
    split_outputs: bool = True,
    core_aten: bool = True,
) -> Path:
    """The cache file of model ``name`` at ``size`` in ``mode`` for the installed versions
    (``-joint`` before the suffix for a graph exported with ``split_outputs=False``,
    ``-ops`` for a training graph exported with ``core_aten=False``)."""
    _check(name, size, mode)
    key = "_".join(f"{package}-{v}" for package, v in versions().items())
    joint = "" if split_outputs else "-joint"
    ops = "-ops" if mode == "training" and not core_aten else ""
    return cache_root(cache_dir) / key / f"{name}-{size}-{mode}{joint}{ops}.json"


def read_cached(
    name: str,
    size: str,
    mode: str,
    cache_dir: str | os.PathLike | None = None,
    *,
    split_outputs: bool = True,
    core_aten: bool = True,
) -> ZooExport | None:
    """The cached export of ``name`` at ``size`` in ``mode``; ``None`` if absent or unreadable."""
    variant = {"split_outputs": split_outputs, "core_aten": core_aten}
    return _read_cache_file(cache_path(name, size, mode, cache_dir, **variant))


def _read_cache_file(path: Path) -> ZooExport | None:
    """The export cached in ``path``; ``None`` if absent or unreadable."""
    if not path.is_file():
        return None
    try:
        data = read_json_file(path)
        graph = graph_from_node_link(data)
        record = data["graph"]["zoo"]
        return ZooExport(
            graph=graph,
            path=path,
            seconds=float(record["export_seconds"]),
            param_bytes=int(record["param_bytes"]),
            cached=True,
        )
    except (InputError, GraphError, KeyError, TypeError, ValueError):
        return None


@dataclass(frozen=True)
class ZooModule:
    """A zoo model built with random weights, its example inputs and its exported graph,
    whose ``graph_module`` reads the module's parameters and buffers in place."""

    module: "torch.nn.Module"
    inputs: tuple["torch.Tensor", ...]
    torch_graph: "TorchGraph"


def build_zoo_module(
    name: str, size: str, mode: str, *, split_outputs: bool = True, core_aten: bool = True
) -> ZooModule:
    """Build model ``name`` at ``size`` and export it in ``mode`` with ``graph_from_module``
    (named ``<name>-<size>-<mode>``), uncached: what ``export_zoo`` caches, and a runnable
    graph of the module itself (``dagopt zoo measure``). Inference exports run under
    ``torch.no_grad()`` (``export_zoo``)."""
    import torch

    from dagopt.io.torch import graph_from_module

    module, inputs = get_model(name).build(size)
    with torch.no_grad() if mode == "inference" else torch.enable_grad():
        exported = graph_from_module(
            module,
            inputs,
            mode=mode,
            name=f"{name}-{size}-{mode}",
            split_outputs=split_outputs,
            core_aten=core_aten,
        )
    return ZooModule(module=module, inputs=tuple(inputs), torch_graph=exported)


def export_zoo(
    name: str,
    *,
    size: str = "small",
    mode: str = "inference",
    cache_dir: str | os.PathLike | None = None,
    refresh: bool = False,
    split_outputs: bool = True,
    core_aten: bool = True,
) -> ZooExport:
    """Model ``name`` at ``size`` as a ``Graph`` in ``mode``, from the cache when it holds it.

    ``refresh=True`` exports even when cached and replaces the cache file. Inference
    exports run under ``torch.no_grad()``, as inference does; this also keeps
    ``@torch.no_grad()`` regions (Llama's rotary embedding) inline rather than as a
    ``wrap_with_set_grad_enabled`` submodule. Unknown names, sizes and modes raise
    ``InputError``. ``split_outputs`` and ``core_aten`` are ``graph_from_module``'s: each
    output of a multi-output operator gets its own lifetime; a training graph keeps the
    operators autograd runs instead of core ATen (each cached apart).
    """
    variant = {"split_outputs": split_outputs, "core_aten": core_aten}
    path = cache_path(name, size, mode, cache_dir, **variant)
    if not refresh:
        hit = _read_cache_file(path)
        if hit is not None:
            return hit
    start = time.perf_counter()
    exported = build_zoo_module(name, size, mode, **variant).torch_graph
    seconds = time.perf_counter() - start
    from dagopt.io.torch import state_bytes

    param_bytes = state_bytes(exported.graph_module)
    document = graph_to_node_link(exported.graph)
    document["graph"]["zoo"] = {
        "model": name,
        "size": size,
        "mode": mode,
        "split_outputs": split_outputs,
        "core_aten": core_aten or mode == "inference",
        "export_seconds": seconds,
        "param_bytes": param_bytes,
        "versions": versions(),
    }
    write_text_atomic(path, json.dumps(document, separators=(",", ":")))
    return ZooExport(
        graph=exported.graph, path=path, seconds=seconds, param_bytes=param_bytes, cached=False
    )


def export_zoo_graph(
    name: str,
    *,
    size: str = "small",
    mode: str = "inference",
    cache_dir: str | os.PathLike | None = None,
    split_outputs: bool = True,
    core_aten: bool = True,
) -> Graph:
    """Model ``name`` at ``size`` as a ``Graph`` in ``mode``, cached (see ``export_zoo``)."""
    return export_zoo(
        name,
        size=size,
        mode=mode,
        cache_dir=cache_dir,
        split_outputs=split_outputs,
        core_aten=core_aten,
    ).graph


def parse_zoo_key(key: str) -> tuple[str, str, str]:
    """The model, size and mode of a zoo graph key ``model/size/mode`` (e.g.
    ``gpt2/small/training``), each checked: ``InputError`` otherwise."""
    parts = key.split("/")
    if len(parts) != 3:
        raise InputError(f"zoo graph {key!r} is not model/size/mode (e.g. gpt2/small/training)")
    name, size, mode = parts
    _check(name, size, mode)
    return name, size, mode


def _check(name: str, size: str, mode: str) -> None:
    get_model(name)
    check_size(size)
    if mode not in MODES:
        raise InputError(f"unknown mode {mode!r} (modes: {', '.join(MODES)})")
