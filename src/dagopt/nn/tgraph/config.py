"""The hyper-parameters of a configuration-ranking model (paper 002, sections 2.2.5-2.3)."""

from dataclasses import dataclass

from dagopt.configs import Config
from dagopt.errors import InputError

KINDS = ("layout", "tile")
ARCHITECTURES = ("tgraph", "tpugraphs-baseline")
AGGREGATIONS = ("paper", "pyg")
NUMERIC_FEATURES = ("raw", "log")
READOUTS = ("mean", "logsumexp")


@dataclass(frozen=True)
class TGraphConfig(Config):
    """One ranking model; JSON keys are the field names.

    ``kind`` is the collection type (``layout``: a configuration per configurable node;
    ``tile``: one per graph, fused late). ``architecture`` is ``tgraph`` (paper 002) or
    ``tpugraphs-baseline`` (the dataset paper's GNN: residual GCN for layout, GraphSAGE
    with late join for tile). ``hidden`` is the width (256 in the paper), ``blocks`` the
    graph blocks (2), ``cross_attention`` switches eq. 6 on, ``aggregation`` is eq. 2
    (``paper``: sum of projected neighbours, L2-normalised output) or PyG's default
    ``SAGEConv`` (``pyg``: mean, no normalisation). ``se_reduction`` is eq. 5's
    bottleneck (8x); ``layout_embedding`` / ``opcode_embedding`` the 4 and 16 channels
    of section 2.2.5. ``numeric_features`` is what is standardised: ``raw``
    ``node_feat[:134]`` and tile ``config_feat`` (section 2.2.5) or ``log``,
    ``sign(x) log(1 + |x|)`` of them first (shapes, sizes and tile sizes span orders of
    magnitude; see docs/tgraph.md). ``physical_layout`` (layout models, beyond the
    paper) adds what each configuration does physically: the extents of each layout
    slot's minor dimensions, the vector lanes of the minor one, and whether an operand
    is read in a layout other than its producer's (``dagopt.nn.tgraph.physical``).
    ``readout`` is eq. 7's (``mean``: global mean pooling, then a linear score) or, for
    layout TGraphs (beyond the paper), ``logsumexp``: a linear score per node, read as
    the log of that node's share of the runtime, and the graph's score the log of their
    sum (``dagopt.nn.tgraph.model``). ``tile_extents`` (tile TGraphs, beyond the paper)
    adds how each tile size covers the extent it splits: the number of tiles and the
    partial last tile's share (``dagopt.nn.tgraph.tile_extents``).
    """

    kind: str = "layout"
    architecture: str = "tgraph"
    hidden: int = 256
    blocks: int = 2
    cross_attention: bool = True
    aggregation: str = "paper"
    se_reduction: int = 8
    layout_embedding: int = 4
    opcode_embedding: int = 16
    numeric_features: str = "raw"
    physical_layout: bool = False
    readout: str = "mean"
    tile_extents: bool = False

    def __post_init__(self) -> None:
        for name, value, known in (
            ("kind", self.kind, KINDS),
            ("architecture", self.architecture, ARCHITECTURES),
            ("aggregation", self.aggregation, AGGREGATIONS),
            ("numeric_features", self.numeric_features, NUMERIC_FEATURES),
            ("readout", self.readout, READOUTS),
        ):
            if value not in known:
                raise InputError(f"model {name} must be one of {', '.join(known)}, got {value!r}")
        sizes = ("hidden", "blocks", "se_reduction", "layout_embedding", "opcode_embedding")
        for name in sizes:
            if int(getattr(self, name)) < 1:
                raise InputError(f"model option {name!r} must be >= 1")
        if self.kind != "layout" or self.architecture != "tgraph":
            for option, used in (
                ("physical_layout", self.physical_layout),
                ("a logsumexp readout", self.readout != "mean"),
            ):
                if used:
                    raise InputError(f"{option} is an option of layout TGraph models")
        if self.tile_extents and (self.kind != "tile" or self.architecture != "tgraph"):
            raise InputError("tile_extents is an option of tile TGraph models")
        if self.cross_attention and self.hidden % 2:
            raise InputError("hidden must be even with cross_attention (eq. 3 concatenates)")


def baseline_config(kind: str) -> TGraphConfig:
    """The TpuGraphs baseline's sizes: layout ``ResModel`` (width 32, 2 GCN layers,
    32-channel opcodes), tile ``LateJoinSAGE`` (width 64, 3 layers, 64 channels)."""
    if kind == "layout":
        return TGraphConfig(
            kind=kind, architecture="tpugraphs-baseline", hidden=32, blocks=2, opcode_embedding=32
        )
    return TGraphConfig(
        kind=kind, architecture="tpugraphs-baseline", hidden=64, blocks=3, opcode_embedding=64
    )
