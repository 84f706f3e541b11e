"""Ranking-model files: a model with its fitted normalisers, and a fold ensemble.

``TGraphRanker`` wraps a ``TGraphNet`` or a ``TpuGraphsBaseline`` with the
standardisation of section 2.2.5 as buffers (``node_feat[:134]`` and, for tile,
``config_feat``), fitted on training files and saved with the weights, so a model file
ranks raw files on its own. ``TGraphEnsemble`` holds the kept folds (section 2.4.3);
``dagopt.rank.tgraph.predict`` averages their scores (section 2.5.3). Both are
``dagopt.nn.checkpoint`` formats.
"""

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from dagopt.configs import Config
from dagopt.errors import InputError
from dagopt.io.tpugraphs import TILE_CONFIG_FEATURES
from dagopt.nn.checkpoint import model_format
from dagopt.nn.tgraph.baseline import TpuGraphsBaseline
from dagopt.nn.tgraph.config import TGraphConfig
from dagopt.nn.tgraph.features import GraphTensors, numeric_features, scaled
from dagopt.nn.tgraph.model import NUMERIC, TGraphNet
from dagopt.nn.tgraph.tile_extents import tile_extent_features


@model_format("tgraph", TGraphConfig)
class TGraphRanker(nn.Module):
    """One model: ``forward(graph, configs)`` -> scores ``(b,)``, lower = faster."""

    def __init__(self, config: TGraphConfig) -> None:
        super().__init__()
        self.config = config
        net = TGraphNet if config.architecture == "tgraph" else TpuGraphsBaseline
        self.net = net(config)
        self.register_buffer("feat_mean", torch.zeros(NUMERIC))
        self.register_buffer("feat_scale", torch.ones(NUMERIC))
        self.register_buffer("config_mean", torch.zeros(TILE_CONFIG_FEATURES))
        self.register_buffer("config_scale", torch.ones(TILE_CONFIG_FEATURES))

    def set_normalizers(
        self,
        feat: tuple[np.ndarray, np.ndarray],
        config: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """Copy fitted ``(mean, scale)`` pairs (``FeatureNormalizer``) into the buffers."""
        pairs = [(feat, self.feat_mean, self.feat_scale)]
        if config is not None:
            pairs.append((config, self.config_mean, self.config_scale))
        for (mean, scale), mean_buffer, scale_buffer in pairs:
            mean_buffer.copy_(torch.as_tensor(np.asarray(mean), dtype=torch.float32))
            scale_buffer.copy_(torch.as_tensor(np.asarray(scale), dtype=torch.float32))

    def forward(self, graph: GraphTensors, configs: torch.Tensor) -> torch.Tensor:
        feat = graph.node_feat
        numeric = numeric_features(feat, self.config.numeric_features)
        numeric = (numeric - self.feat_mean) / self.feat_scale
        feat = torch.cat([numeric, feat[:, NUMERIC:]], dim=1)
        if self.config.kind == "tile":
            raw = configs
            configs = scaled(configs, self.config.numeric_features) - self.config_mean
            configs = configs / self.config_scale
            if self.config.tile_extents:
                configs = torch.cat([configs, tile_extent_features(graph, raw)], dim=1)
        return self.net(graph, feat, configs)


@dataclass(frozen=True)
class TGraphEnsembleConfig(Config):
    """``members`` models of one ``member`` configuration (the kept folds)."""

    member: TGraphConfig = field(default_factory=TGraphConfig)
    members: int = 1

    def __post_init__(self) -> None:
        if int(self.members) < 1:
            raise InputError("an ensemble needs at least 1 member")


@model_format("tgraph-ensemble", TGraphEnsembleConfig)
class TGraphEnsemble(nn.Module):
    """The kept folds' models; ``dagopt.rank.tgraph.predict`` averages their scores."""

    def __init__(self, config: TGraphEnsembleConfig) -> None:
        super().__init__()
        self.config = config
        self.members = nn.ModuleList(TGraphRanker(config.member) for _ in range(config.members))

    @classmethod
    def of(cls, models: list[TGraphRanker]) -> "TGraphEnsemble":
        """An ensemble holding copies of ``models`` (all of one configuration)."""
        if not models or any(m.config != models[0].config for m in models):
            raise InputError("an ensemble needs models of one configuration")
        ensemble = cls(TGraphEnsembleConfig(member=models[0].config, members=len(models)))
        for member, model in zip(ensemble.members, models, strict=True):
            member.load_state_dict(model.state_dict())
        return ensemble.eval()
