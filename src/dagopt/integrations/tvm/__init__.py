"""Apache TVM (LLVM CPU backend) kernels and the timing protocol of the measured
configuration dataset (``docs/configs_dataset.md``; paper 002, section 1.4).

``measure`` times compiled programs (one thread, pinned core, process CPU time,
interleaved rounds); ``tile`` builds fused conv2d / dense + bias + activation kernels
under a tiling; ``layout`` builds small conv / dot / reshape programs under physical
layouts. TVM is imported lazily by ``require_tvm``, so ``import dagopt`` stays fast and
TVM remains an optional extra (``pip install 'dagopt[tvm]'``).
"""

import os
from collections.abc import Mapping
from types import ModuleType

from dagopt.errors import InputError

TVM_VERSION = "0.27.0.post1"
"""The Apache TVM release the dataset was measured with (the ``[tvm]`` extra pins it)."""


def require_tvm() -> ModuleType:
    """The ``tvm`` module, one TVM thread (``TVM_NUM_THREADS=1`` unless set); a missing
    install is a one-line ``InputError``."""
    os.environ.setdefault("TVM_NUM_THREADS", "1")
    try:
        import tvm
    except ImportError:
        raise InputError(
            f"Apache TVM is not installed: pip install 'dagopt[tvm]' (apache-tvm=={TVM_VERSION})"
        ) from None
    return tvm


def cpu_target():
    """The LLVM CPU target on one core (``num-cores`` 1: kernels run single-threaded)."""
    tvm = require_tvm()
    return tvm.target.Target({"kind": "llvm", "num-cores": 1})


def compile_functions(functions: Mapping[str, object]):
    """Compile ``PrimFunc``s together (one ``IRModule``, one LLVM pass) for the one-core
    CPU target; call each by its name on the returned executable. Batching amortises
    TVM's per-module overhead (about 40 ms per function alone, 10-40 ms batched)."""
    tvm = require_tvm()
    named = {name: f.with_attr("global_symbol", name) for name, f in functions.items()}
    return tvm.compile(tvm.IRModule(named), target=cpu_target())
