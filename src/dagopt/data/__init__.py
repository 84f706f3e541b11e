"""Example files shipped with dagopt, written out by ``dagopt examples``.

- ``tiny.json``: a six-node graph file in the node-link format;
- ``small-cnn.onnx``: a small residual CNN with random weights
  (``examples/make_small_cnn.py`` rebuilds it);
- ``ordering-quick.json``, ``regal-quick.json``: training configs of a minute or two on
  a CPU, to try ``dagopt train ordering`` and ``dagopt train placement``;
- ``tile-kernel.npz``, ``layout-program.npz``: two TpuGraphs files of the measured
  configuration dataset's test split (``datasets/configs``: a Swin-T dense kernel with
  64 tilings, a Swin-T attention program with 200 layouts), for ``dagopt rank``.
"""

from importlib import resources

EXAMPLE_FILES = (
    "tiny.json",
    "small-cnn.onnx",
    "ordering-quick.json",
    "regal-quick.json",
    "tile-kernel.npz",
    "layout-program.npz",
)


def example_bytes(name: str) -> bytes:
    """The content of the shipped example file ``name`` (one of ``EXAMPLE_FILES``)."""
    return resources.files(__name__).joinpath(name).read_bytes()
