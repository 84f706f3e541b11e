"""TGraph (paper 002): the model, its loss, inference (TTA, fold ensembles), training,
resume and the ``dagopt rank`` / ``dagopt train tgraph`` commands, on SYNTHETIC records
(random runtimes: these tests check mechanics, not ranking quality)."""

import dataclasses
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from dagopt.cli.main import app
from dagopt.errors import DagoptWarning, InputError
from dagopt.generate.tpugraphs import (
    synthetic_layout_record,
    synthetic_tile_record,
    write_synthetic_collection,
)
from dagopt.integrations.tvm.tile import TileKernel, Tiling
from dagopt.io.tpugraphs import LayoutRecord, read_submission, read_tpugraphs, write_tpugraphs
from dagopt.models import model_path
from dagopt.nn.checkpoint import load_model, save_model
from dagopt.nn.layers.cross_config_attention import CrossConfigAttention
from dagopt.nn.tgraph.config import TGraphConfig, baseline_config
from dagopt.nn.tgraph.features import numeric_features
from dagopt.nn.tgraph.loss import list_mle_loss, pairwise_hinge_loss, tpugraphs_loss
from dagopt.nn.tgraph.physical import physical_features
from dagopt.nn.tgraph.ranker import TGraphEnsemble, TGraphRanker
from dagopt.nn.tgraph.tile_extents import tile_extent_features
from dagopt.objectives.ranking import kendall_tau, tile_metric
from dagopt.rank.configs.features import HloNode, graph_arrays
from dagopt.rank.configs.tile import tile_record
from dagopt.rank.tgraph import (
    evaluate,
    fit_normalizers,
    load_ranker,
    merge_rankers,
    normalize,
    open_ranking,
    predict,
    prepare,
    shipped_model_name,
)
from dagopt.train.tgraph import (
    TPUGRAPHS_RECIPE,
    TGraphTrainConfig,
    companion_folds,
    fold_of,
    load_graphs,
    optimizer_for,
    read_metrics,
    train_step,
    train_tgraph,
    training_graphs,
    warmup_cosine,
)

runner = CliRunner()
SMALL = {"hidden": 16, "se_reduction": 4}
CONFIGS = {
    "tgraph-layout": TGraphConfig(**SMALL),
    "tgraph-layout-no-cross-pyg": TGraphConfig(**SMALL, cross_attention=False, aggregation="pyg"),
    "tgraph-layout-physical": TGraphConfig(**SMALL, physical_layout=True),
    "tgraph-layout-logsumexp": TGraphConfig(**SMALL, readout="logsumexp", numeric_features="log"),
    "tgraph-tile": TGraphConfig(kind="tile", **SMALL),
    "tgraph-tile-extents": TGraphConfig(kind="tile", **SMALL, tile_extents=True),
    "baseline-layout": baseline_config("layout"),
    "baseline-tile": baseline_config("tile"),
}


@pytest.fixture(autouse=True)
def one_thread():
    """Small models train fastest on one thread (two fight over a shared CPU)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def graph_for(kind: str, seed: int = 0, configs: int = 24):
    if kind == "layout":
        record = synthetic_layout_record(
            seed, num_nodes=60, num_configurable=6, num_configs=configs
        )
    else:
        record = synthetic_tile_record(seed, num_configs=configs)
    return prepare(record)


def model_for(config: TGraphConfig, graphs, seed: int = 0) -> TGraphRanker:
    torch.manual_seed(seed)
    model = TGraphRanker(config)
    normalize(model, *fit_normalizers(graphs, config.numeric_features))
    return model.eval()


@pytest.mark.parametrize("name", CONFIGS)
def test_scores_permute_with_the_configurations(name):
    config = CONFIGS[name]
    graph = graph_for(config.kind)
    model = model_for(config, [graph])
    index = np.arange(graph.num_configs)
    perm = np.random.default_rng(3).permutation(index)
    with torch.no_grad():
        scores = model(graph.tensors, graph.configs(index))
        permuted = model(graph.tensors, graph.configs(perm))
    torch.testing.assert_close(permuted, scores[perm], rtol=1e-5, atol=1e-5)
    assert scores.std() > 0  # configurations are told apart


def test_cross_attention_sees_the_other_configurations():
    graph = graph_for("layout")
    model = model_for(CONFIGS["tgraph-layout"], [graph])
    alone = CONFIGS["tgraph-layout-no-cross-pyg"]
    other = model_for(alone, [graph])
    with torch.no_grad():
        for m, depends in ((model, True), (other, False)):
            full = m(graph.tensors, graph.configs(np.arange(12)))
            half = m(graph.tensors, graph.configs(np.arange(6)))
            assert torch.allclose(full[:6], half, atol=1e-6) is not depends


def test_physical_layout_features_read_extents_lanes_and_copies():
    """A dot ``x (4, 8) . w (8, 2)`` and a reshape of its output, both configurable."""
    nodes = [
        HloNode("parameter", (4, 8)),
        HloNode("parameter", (8, 2), parameter=1),
        HloNode("dot", (4, 2), operands=(0, 1)),
        HloNode("reshape", (8,), operands=(2,)),
    ]
    feat, opcode, edges = graph_arrays(nodes)

    def slots(*layouts):  # output, operand and kernel minor-to-major orders, -1 padded
        return [value for layout in layouts for value in (*layout, *[-1] * (6 - len(layout)))]

    dot_a = slots((0, 1), (1, 0), (0, 1))
    reshape_a = slots((0,), (0, 1), ())
    dot_b = slots((1, 0), (0, 1), (1, 0))
    record = LayoutRecord(
        node_feat=feat,
        node_opcode=opcode,
        edge_index=edges,
        node_config_ids=np.array([2, 3]),
        node_config_feat=np.array([[dot_a, reshape_a], [dot_b, reshape_a]], dtype=np.float32),
        config_runtime=np.array([1.0, 2.0]),
    )
    graph = prepare(record)
    got = physical_features(graph.tensors, graph.configs(np.arange(2)))
    ln = np.log1p

    def lanes(extent):  # the emitter's vector lanes on that minor extent, log2 / 5
        return np.log2(np.gcd(extent, 32)) / 5

    # per slot: minor extent, its lanes, second minor extent (+ copy flag for operands)
    expected = [
        [  # a: x read row-major (no copy), w column-major (a copy); reshape reads dot's layout
            [ln(4), lanes(4), ln(2), ln(8), lanes(8), ln(4), 0, ln(8), lanes(8), ln(2), 1],
            [ln(8), lanes(8), 0, ln(4), lanes(4), ln(2), 0, 0, 0, 0, 0],
        ],
        [  # b: x column-major (a copy), w row-major; dot now writes (1, 0), reshape reads (0, 1)
            [ln(2), lanes(2), ln(4), ln(4), lanes(4), ln(8), 1, ln(2), lanes(2), ln(8), 0],
            [ln(8), lanes(8), 0, ln(4), lanes(4), ln(2), 1, 0, 0, 0, 0],
        ],
    ]
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float32))


def test_physical_layout_is_a_layout_tgraph_option():
    with pytest.raises(InputError, match="physical_layout"):
        TGraphConfig(kind="tile", physical_layout=True)
    with pytest.raises(InputError, match="physical_layout"):
        TGraphConfig(architecture="tpugraphs-baseline", physical_layout=True)


def test_tile_extent_features_count_tiles_and_tails():
    """A dense ``x (5, 6) . w (12, 6)``: weight tile (8, 2) over (12, 6), output tile
    (4, 8) over (5, 12); a second tiling divides every extent."""
    kernel = TileKernel("dense", "gelu", m=5, n=12, k=6)
    tilings = [Tiling((4, 8), 2, 0, False, False), Tiling((1, 4), 3, 1, True, True)]
    graph = prepare(tile_record(kernel, tilings, np.array([2, 1]), 3, "dense"))
    got = tile_extent_features(graph.tensors, torch.as_tensor(graph.tile))
    count = np.zeros((2, 12))
    tail = np.zeros((2, 12))
    # columns 0-1 the weight tile (n, k), 6-7 the output tile (m, n); 2-5 and 8-11 unused
    count[0, [0, 1, 6, 7]] = [2, 3, 2, 2]
    tail[0, [0, 1, 6, 7]] = [1 - 12 / 16, 0, 1 - 5 / 8, 1 - 12 / 16]
    count[1, [0, 1, 6, 7]] = [3, 2, 5, 3]
    expected = np.concatenate([np.where(count > 0, np.log1p(count), 0), tail], axis=1)
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float32))
    record = tile_record(kernel, tilings, np.array([2, 1]), 3, "rootless")
    rootless = dataclasses.replace(record, node_feat=np.zeros_like(record.node_feat))
    with pytest.raises(InputError, match="root"):
        tile_extent_features(prepare(rootless).tensors, torch.as_tensor(graph.tile))


def test_tile_extents_is_a_tile_tgraph_option():
    with pytest.raises(InputError, match="tile_extents"):
        TGraphConfig(kind="layout", tile_extents=True)
    with pytest.raises(InputError, match="tile_extents"):
        TGraphConfig(kind="tile", architecture="tpugraphs-baseline", tile_extents=True)


def test_logsumexp_readout_is_the_log_of_a_sum_of_node_scores():
    """With the same weights, the mean readout is ``f_out(mean_i h_i)`` (``f_out`` is
    affine: the mean of the node scores) and the other ``log sum_i exp(f_out(h_i))``."""
    graph = graph_for("layout")
    lse = model_for(CONFIGS["tgraph-layout-logsumexp"], [graph])
    mean = TGraphRanker(dataclasses.replace(lse.config, readout="mean"))
    mean.load_state_dict(lse.state_dict())
    net, configs = lse.net, graph.configs(np.arange(6))
    node_scores = []
    net.out.register_forward_hook(lambda module, inputs, output: node_scores.append(output))
    with torch.no_grad():
        got = lse(graph.tensors, configs)
        pooled = mean(graph.tensors, configs)
    per_node = node_scores[0].squeeze(-1)  # (6 configurations, nodes)
    assert per_node.shape == (6, graph.tensors.num_nodes)
    torch.testing.assert_close(got, torch.logsumexp(per_node, dim=1))
    torch.testing.assert_close(pooled, per_node.mean(dim=1))  # the same f_out, averaged


def test_logsumexp_readout_is_a_layout_tgraph_option():
    with pytest.raises(InputError, match="readout must be one of mean, logsumexp"):
        TGraphConfig(readout="max")
    for other in ({"kind": "tile"}, {"architecture": "tpugraphs-baseline"}):
        with pytest.raises(InputError, match="logsumexp readout"):
            TGraphConfig(**other, readout="logsumexp")


def test_cross_config_attention_is_eq_6():
    layer = CrossConfigAttention(temperature=2.0)
    x = torch.randn(5, 3, 4)
    expected = x * torch.exp(x / 2) / torch.exp(x / 2).sum(dim=0, keepdim=True)
    torch.testing.assert_close(layer(x), expected)
    torch.testing.assert_close(layer(x[:1]), x[:1])  # one configuration: identity


def test_pairwise_hinge_loss_is_eq_8():
    scores = torch.tensor([0.0, 2.0, 0.5])
    runtimes = torch.tensor([1.0, 3.0, 2.0])
    # pairs (slower, faster): (1,0): max(0, 1-2)=0; (1,2): 1-1.5=0 -> 0; (2,0): 1-0.5=0.5
    assert float(pairwise_hinge_loss(scores, runtimes)) == pytest.approx(0.5 / 3)
    assert float(pairwise_hinge_loss(scores, torch.ones(3))) == 0.0


def test_log_ratio_pair_weights_count_far_apart_pairs_most():
    scores = torch.tensor([0.0, 2.0, 0.5])
    runtimes = torch.tensor([1.0, 3.0, 2.0])
    # the margins above (0, 0, 0.5) weighed by log(3/1), log(3/2), log(2/1)
    weights = np.log([3.0, 1.5, 2.0])
    expected = 0.5 * weights[2] / weights.sum()
    loss = pairwise_hinge_loss(scores, runtimes, "log-ratio")
    assert float(loss) == pytest.approx(expected)
    # a pair 1 % apart counts 1/70th of one 2 x apart; the uniform loss counts them alike
    near = torch.tensor([1.0, 1.01, 2.0])
    flat = torch.zeros(3)
    assert float(pairwise_hinge_loss(flat, near)) == pytest.approx(1.0)
    assert float(pairwise_hinge_loss(flat, near, "log-ratio")) == pytest.approx(1.0)
    wrong_near = torch.tensor([1.5, 0.0, 3.0])  # only the near pair is inverted, by 1.5
    uniform = float(pairwise_hinge_loss(wrong_near, near))
    weighted = float(pairwise_hinge_loss(wrong_near, near, "log-ratio"))
    assert weighted < uniform / 10
    with pytest.raises(InputError, match="runtimes > 0"):
        pairwise_hinge_loss(scores, torch.tensor([1.0, 0.0, 2.0]), "log-ratio")
    with pytest.raises(InputError, match="pair weights"):
        pairwise_hinge_loss(scores, runtimes, "squared")


def test_pair_weights_are_a_tgraph_recipe_option():
    tile = TGraphConfig(kind="tile", **SMALL)
    TGraphTrainConfig(collection="tile:xla", model=tile, pair_weights="log-ratio")
    with pytest.raises(InputError, match="pair weights"):
        TGraphTrainConfig(collection="tile:xla", model=tile, pair_weights="squared")
    with pytest.raises(InputError, match="pair_weights"):
        TGraphTrainConfig(
            collection="tile:xla", model=tile, recipe="tpugraphs", pair_weights="log-ratio"
        )


def test_list_mle_is_the_plackett_luce_likelihood_of_slowest_first():
    scores = torch.tensor([0.0, 2.0, 0.5])
    runtimes = torch.tensor([1.0, 3.0, 2.0])  # slowest first: 1, 2, 0
    s = scores[[1, 2, 0]]
    expected = sum(float(torch.logsumexp(s[i:], 0) - s[i]) for i in range(3))
    assert float(list_mle_loss(scores, runtimes)) == pytest.approx(expected)
    assert float(list_mle_loss(scores, runtimes, temperature=10)) == pytest.approx(
        float(list_mle_loss(scores / 10, runtimes))
    )
    assert list_mle_loss(runtimes * 5, runtimes) < list_mle_loss(-runtimes * 5, runtimes)
    # tile: (ListMLE + 0.02 MSE) / 1.02
    mse = float(torch.mean((scores - runtimes) ** 2))
    assert float(tpugraphs_loss(scores, runtimes, 1.0, 0.02)) == pytest.approx(
        (expected + 0.02 * mse) / 1.02
    )


def test_the_tpugraphs_recipe_is_the_official_training():
    layout = tiny_run(recipe="tpugraphs", configs_per_step=0)
    tile = tiny_run(
        recipe="tpugraphs", configs_per_step=0, collection="tile:xla",
        model=TGraphConfig(kind="tile", **SMALL),
    )  # fmt: skip
    assert (layout.batch_configs, layout.graphs_per_step) == (16, 8)
    assert (tile.batch_configs, tile.graphs_per_step) == (10, 10)
    assert (tiny_run().graphs_per_step, tiny_run(configs_per_step=0).batch_configs) == (1, 128)
    model = TGraphRanker(TGraphConfig(**SMALL))
    optimizer = optimizer_for(model, layout)
    assert type(optimizer) is torch.optim.Adam and optimizer.defaults["weight_decay"] == 0
    with pytest.raises(InputError, match="leave warmup, grad_clip at the default"):
        tiny_run(recipe="tpugraphs", warmup=0.1, grad_clip=2.0)
    with pytest.raises(InputError, match="unknown recipe"):
        tiny_run(recipe="keras")


def test_each_gradient_tensor_is_clipped_on_its_own_in_the_tpugraphs_recipe():
    graph = graph_for("layout")
    config = tiny_run(recipe="tpugraphs")
    model = model_for(CONFIGS["baseline-layout"], [graph])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)  # keeps the clipped gradients
    train_step(model, optimizer, [(graph, np.arange(16))], config)
    norms = [float(p.grad.norm()) for p in model.parameters() if p.grad is not None]
    assert max(norms) <= TPUGRAPHS_RECIPE["layout"].clip_norm * (1 + 1e-5)
    assert sum(n > 0 for n in norms) > 1


def test_the_tpugraphs_recipe_stops_early_and_resumes_stopped(tmp_path, monkeypatch):
    patience = dataclasses.replace(TPUGRAPHS_RECIPE["layout"], early_stop=2)
    monkeypatch.setitem(TPUGRAPHS_RECIPE, "layout", patience)
    graphs = [graph_for("layout", seed=s) for s in range(6)]
    config = tiny_run(recipe="tpugraphs", epochs=40, train_folds=1)
    train_tgraph(tmp_path, config, graphs=graphs)
    rows = read_metrics(tmp_path / "fold-0")
    best = max(r.validation_score for r in rows)
    first_best = next(r.epoch for r in rows if r.validation_score == best)
    assert len(rows) < 40 and rows[-1].epoch - first_best == 2
    assert [r.steps for r in rows[:2]] == [1, 2]  # 4 training graphs, 8 a step
    train_tgraph(tmp_path, None, resume=True, graphs=graphs)
    assert len(read_metrics(tmp_path / "fold-0")) == len(rows)


@pytest.mark.parametrize(
    "name",
    [
        "tgraph-layout",
        "tgraph-layout-physical",
        "tgraph-layout-logsumexp",
        "tgraph-tile",
        "baseline-layout",
    ],
)
def test_one_training_step_lowers_the_loss(name):
    config = CONFIGS[name]
    graph = prepare(
        synthetic_layout_record(1, num_nodes=60, num_configurable=6, num_configs=32)
        if config.kind == "layout"
        else synthetic_tile_record(1, num_configs=32),
        deduplicate=True,
    )
    model = model_for(config, [graph])
    index = np.arange(graph.num_configs)
    runtimes = torch.as_tensor(graph.runtimes)

    def loss() -> float:
        model.train()
        with torch.no_grad():
            return float(pairwise_hinge_loss(model(graph.tensors, graph.configs(index)), runtimes))

    before = loss()
    train_step(
        model, optimizer_for(model, TGraphTrainConfig()), [(graph, index)], TGraphTrainConfig()
    )
    assert loss() < before


def test_tta_and_fold_ensembling_are_deterministic_for_a_seed():
    graphs = [graph_for("layout", seed=s, configs=40) for s in range(2)]
    a, b = (model_for(CONFIGS["tgraph-layout"], graphs, seed=s) for s in (1, 2))
    ensemble = TGraphEnsemble.of([a, b])
    run = lambda model, seed: predict(model, graphs[0], permutations=3, batch=16, seed=seed)  # noqa: E731
    np.testing.assert_array_equal(run(ensemble, 7), run(ensemble, 7))
    assert not np.array_equal(run(ensemble, 7), run(ensemble, 8))  # batches depend on the seed
    np.testing.assert_allclose(run(ensemble, 7), (run(a, 7) + run(b, 7)) / 2, rtol=1e-6)
    one = np.mean([predict(a, graphs[0], permutations=1, batch=16, seed=s) for s in (5,)], axis=0)
    assert one.shape == (40,)


def test_prediction_reports_every_batch_it_scores():
    """``predict`` tells a listener (``dagopt.progress``) each batch before scoring it:
    members x permutations x batches in all (2 x 3 x ceil(40 / 16)), counting up."""
    from dagopt.progress import reporting

    graphs = [graph_for("layout", seed=s, configs=40) for s in range(2)]
    ensemble = TGraphEnsemble.of(
        [model_for(CONFIGS["tgraph-layout"], graphs, seed=s) for s in (1, 2)]
    )
    seen = []
    with reporting(lambda stage, done, total: seen.append((stage, done, total))):
        predict(ensemble, graphs[0], permutations=3, batch=16)
    assert [done for _, done, _ in seen] == list(range(18))
    assert {total for _, _, total in seen} == {18}
    assert all(graphs[0].name in stage for stage, _, _ in seen)


@pytest.mark.parametrize("name", ["tgraph-layout", "tgraph-tile", "baseline-layout"])
def test_one_batch_of_every_configuration_is_scored_once_whatever_the_permutations(name):
    """Every model is equivariant to the order of the configurations in a batch (eq. 6's
    softmax included), so where one batch holds them all ``predict`` scores one order:
    the scores of a permuted batch, put back in order, are the same, and 10 permutations
    give what one gives, in one batch per member."""
    from dagopt.progress import reporting

    kind = name.split("-")[1]
    graphs = [graph_for(kind, seed=s, configs=24) for s in range(2)]
    model = model_for(CONFIGS[name], graphs, seed=1).eval()
    order = np.random.default_rng(0).permutation(24)
    with torch.no_grad():
        straight = model(graphs[0].tensors, graphs[0].configs(np.arange(24)))
        permuted = model(graphs[0].tensors, graphs[0].configs(order))
    torch.testing.assert_close(permuted, straight[order], rtol=1e-5, atol=1e-5)
    seen = []
    with reporting(lambda stage, done, total: seen.append(total)):
        ten = predict(model, graphs[0], permutations=10, batch=24)
    assert seen == [1]
    np.testing.assert_allclose(ten, predict(model, graphs[0], permutations=1), rtol=1e-5)


def test_log_numeric_features_are_standardised_after_the_log():
    """``numeric_features="log"``: the normaliser is fitted on ``sign(x) log(1 + |x|)``
    of ``node_feat[:134]`` and the model standardises the same transform, so the
    training graph's standardised features have mean 0 in every varying column."""
    graph = graph_for("layout")
    config = TGraphConfig(**SMALL, numeric_features="log")
    feat, _ = fit_normalizers([graph], config.numeric_features)
    raw = graph.tensors.node_feat[:, :134].double().numpy()
    logged = np.sign(raw) * np.log1p(np.abs(raw))
    assert np.allclose(feat.mean, logged.mean(axis=0))
    model = model_for(config, [graph])
    numeric = numeric_features(graph.tensors.node_feat, "log")
    standard = ((numeric - model.feat_mean) / model.feat_scale).double().numpy()
    varying = logged.std(axis=0) > 0
    assert varying.any() and np.allclose(standard[:, varying].mean(axis=0), 0, atol=1e-5)
    with pytest.raises(InputError, match="numeric_features"):
        TGraphConfig(numeric_features="sqrt")


def test_log_numeric_features_log_the_tile_sizes_too():
    """``numeric_features="log"`` on a tile model: ``config_feat`` (tile sizes and their
    products, powers of two over three orders of magnitude) is standardised after the
    same ``sign(x) log(1 + |x|)``, in the fitted normaliser and in the model."""
    graph = graph_for("tile")
    config = TGraphConfig(kind="tile", **SMALL, numeric_features="log")
    _, tiles = fit_normalizers([graph], config.numeric_features)
    logged = np.sign(graph.tile) * np.log1p(np.abs(graph.tile.astype(np.float64)))
    assert np.allclose(tiles.mean, logged.mean(axis=0))
    model = model_for(config, [graph])
    seen = []
    model.net.register_forward_pre_hook(lambda _, inputs: seen.append(inputs[2]))
    model(graph.tensors, graph.configs(np.arange(graph.num_configs)))
    varying = logged.std(axis=0) > 0
    assert varying.any() and np.allclose(seen[0][:, varying].mean(0), 0, atol=1e-5)


def test_evaluate_uses_the_ranking_metrics():
    for kind, metric in (("layout", kendall_tau), ("tile", tile_metric)):
        graphs = [graph_for(kind, seed=s) for s in range(3)]
        model = model_for(CONFIGS[f"tgraph-{kind}"], graphs)
        expected = np.mean(
            [metric(predict(model, g, permutations=2, seed=4), g.runtimes) for g in graphs]
        )
        assert evaluate(model, graphs, permutations=2, seed=4) == pytest.approx(expected)


def test_model_files_round_trip(tmp_path):
    graph = graph_for("tile")
    model = model_for(CONFIGS["tgraph-tile"], [graph])
    save_model(tmp_path / "one.pt", model, {})
    save_model(tmp_path / "two.pt", TGraphEnsemble.of([model, model]), {})
    expected = predict(model, graph, permutations=2)
    for name in ("one.pt", "two.pt"):
        np.testing.assert_allclose(
            predict(load_ranker(tmp_path / name), graph, permutations=2), expected, rtol=1e-6
        )
    (tmp_path / "bad.pt").write_bytes(b"not a model")
    with pytest.raises(InputError, match="cannot read model file"):
        load_ranker(tmp_path / "bad.pt")


def test_merged_runs_average_all_their_members(tmp_path):
    """``dagopt train tgraph-ensemble`` (``merge_rankers``): the merged file predicts the
    mean over every member of its inputs (a 2-fold run and a single model: 3 members),
    names its inputs in its meta; mixed configurations and fewer than two files are
    one-line errors (exit 2)."""
    graph = graph_for("layout")
    a, b, c = (model_for(CONFIGS["tgraph-layout"], [graph], seed=s) for s in (1, 2, 3))
    save_model(tmp_path / "run.pt", TGraphEnsemble.of([a, b]), {"seed": 0})
    save_model(tmp_path / "fold.pt", c, {"seed": 1})
    out = tmp_path / "merged.pt"
    result = dagopt(
        "train", "tgraph-ensemble", tmp_path / "run.pt", tmp_path / "fold.pt", "-o", out
    )
    assert result.exit_code == 0, result.output
    assert "3 members of 2 models" in result.stdout
    merged = load_ranker(out)
    run = lambda model: predict(model, graph, permutations=2, batch=8, seed=3)  # noqa: E731
    np.testing.assert_allclose(run(merged), (run(a) + run(b) + run(c)) / 3, rtol=1e-6)
    _, meta = merge_rankers([tmp_path / "run.pt", tmp_path / "fold.pt"])
    assert [source["meta"]["seed"] for source in meta["merged_from"]] == [0, 1]
    save_model(tmp_path / "tile.pt", model_for(CONFIGS["tgraph-tile"], [graph_for("tile")]), {})
    for files, message in (
        ([tmp_path / "run.pt", tmp_path / "tile.pt"], "models of one configuration"),
        ([tmp_path / "run.pt"], "at least two model files"),
    ):
        result = dagopt("train", "tgraph-ensemble", *files, "--out", tmp_path / "x.pt")
        assert result.exit_code == 2 and message in result.output
        assert not (tmp_path / "x.pt").exists()


def test_merging_refuses_a_member_twice_and_mixed_collections(tmp_path):
    """A run and one of its own folds share a member, a file named twice counts twice,
    and models recording other collections do not mix: each a one-line error."""
    graph = graph_for("layout")
    a, b, c = (model_for(CONFIGS["tgraph-layout"], [graph], seed=s) for s in (1, 2, 3))
    random, nlp = ({"collection": "layout:xla:random"}, {"collection": "layout:nlp:random"})
    save_model(tmp_path / "run.pt", TGraphEnsemble.of([a, b]), random)
    save_model(tmp_path / "fold.pt", b, {"fold": 1, "config": {"collection": "layout:xla:random"}})
    save_model(tmp_path / "other.pt", c, nlp)
    merged = tmp_path / "merged.pt"
    save_model(merged, TGraphEnsemble.of([c]), {"merged_from": [{"path": "x", "meta": random}]})
    for files, message in (
        (
            ["run.pt", "fold.pt"],
            "run.pt and " + str(tmp_path / "fold.pt") + " hold the same member",
        ),
        (["run.pt", "run.pt"], "run.pt: named twice"),
        (["run.pt", "other.pt"], "models of different collections"),
        (["merged.pt", "other.pt"], "merged.pt (layout:xla:random); "),
    ):
        with pytest.raises(InputError, match=re.escape(message)):
            merge_rankers([tmp_path / name for name in files])
    assert len(merge_rankers([tmp_path / "run.pt", merged])[0].members) == 3


def test_the_learning_rate_warms_up_then_follows_one_cosine():
    factor = warmup_cosine(105, 0.05)  # 5 warm-up steps, then 100 of cosine
    assert [round(factor(s), 3) for s in (0, 4, 5, 55, 105)] == [0.2, 1.0, 1.0, 0.5, 0.0]


def tiny_run(**changes) -> TGraphTrainConfig:
    values = dict(
        model=TGraphConfig(**SMALL), epochs=2, folds=3, train_folds=2, keep_folds=1,
        configs_per_step=16,
    )  # fmt: skip
    return TGraphTrainConfig(**{**values, **changes})


def test_training_resumes_where_it_stopped(tmp_path):
    graphs = [graph_for("layout", seed=s) for s in range(6)]
    train_tgraph(tmp_path / "straight", tiny_run(), graphs=graphs)

    class Stop(Exception):
        pass

    def stop_after_first(row):
        if row.fold == 0 and row.epoch == 0:
            raise Stop

    with pytest.raises(Stop):
        train_tgraph(tmp_path / "cut", tiny_run(), graphs=graphs, on_epoch=stop_after_first)
    with pytest.raises(InputError, match="a run exists here"):
        train_tgraph(tmp_path / "cut", tiny_run(), graphs=graphs)
    train_tgraph(tmp_path / "cut", None, resume=True, graphs=graphs)
    straight, cut = (load_ranker(tmp_path / d / "model.pt") for d in ("straight", "cut"))
    for key, value in straight.state_dict().items():
        torch.testing.assert_close(cut.state_dict()[key], value, rtol=0, atol=0)
    rows = read_metrics(tmp_path / "cut" / "fold-1")
    assert [r.epoch for r in rows] == [0, 1] and rows[-1].steps == 8


def test_step_budget_caps_the_steps(tmp_path):
    graphs = [graph_for("layout", seed=s) for s in range(6)]
    train_tgraph(tmp_path, tiny_run(max_steps=5, train_folds=1), graphs=graphs)
    rows = read_metrics(tmp_path / "fold-0")
    assert [r.steps for r in rows] == [4, 5]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"collection": "tile:xla"}, "needs model kind 'tile'"),
        ({"folds": 1}, "folds need"),
        ({"keep_folds": 3}, "folds need"),
        ({"configs_per_step": 1}, "configs_per_step"),
        ({"collection": "layout:foo"}, "unknown collection"),
        ({"companions": ("tile:xla",)}, "not another layout collection"),
        ({"companions": ("layout:xla:random",)}, "not another layout collection"),
        ({"companions": ("layout:nlp:random",) * 2}, "named twice"),
        ({"seed": -1}, "'seed' must be >= 0"),
        ({"splits": ()}, "splits is empty"),
        ({"splits": ("train", "valid", "train")}, "names a split twice"),
        ({"splits": ("training",)}, "unknown split 'training'"),
    ],
)
def test_bad_training_options_are_one_line_errors(changes, message):
    with pytest.raises(InputError, match=message):
        tiny_run(**changes)


def test_a_damaged_run_marker_is_refused_on_resume(tmp_path):
    graphs = [graph_for("layout", seed=s) for s in range(6)]
    train_tgraph(tmp_path, tiny_run(epochs=1), graphs=graphs)
    marker = tmp_path / "state.pt"
    marker.write_bytes(marker.read_bytes()[:100])
    with pytest.raises(InputError, match="cannot resume from it"):
        train_tgraph(tmp_path, None, resume=True, graphs=graphs)
    torch.save({"epoch": -1, "folds": 7}, marker)
    with pytest.raises(InputError, match="not the marker of this run"):
        train_tgraph(tmp_path, None, resume=True, graphs=graphs)
    torch.save({"epoch": -1, "folds": 3}, marker)
    fold_1 = tmp_path / "fold-1" / "state.pt"
    fold_1.write_bytes((tmp_path / "fold-0" / "state.pt").read_bytes())
    with pytest.raises(InputError, match=r"fold-1/state\.pt: made by another run .* or another"):
        train_tgraph(tmp_path, None, resume=True, graphs=graphs)


def test_a_hopeless_run_fails_before_its_run_directory_exists(tmp_path):
    """Folds left without validation graphs, graphs with nothing to rank (one
    configuration, or one runtime for all) and nothing else: errors before any fold
    trains, no run left."""
    graphs = [graph_for("layout", seed=s) for s in range(4)]
    single = dataclasses.replace(graph_for("layout", configs=1), name="single")
    flat = dataclasses.replace(graphs[0], name="flat", runtimes=np.full(24, 3.0))
    for config, given, message in (
        (tiny_run(folds=6, train_folds=6), graphs, "fold 4 would have no validation graph"),
        (tiny_run(), [single, flat], "nothing to rank: all 2 graphs have fewer than 2"),
    ):
        with pytest.raises(InputError, match=message):
            train_tgraph(tmp_path / "run", config, graphs=given)
        assert not (tmp_path / "run").exists()


def test_graphs_with_nothing_to_rank_are_left_out_with_a_warning():
    graphs = [graph_for("layout", seed=s) for s in range(4)]
    single = dataclasses.replace(graph_for("layout", configs=1), name="single")
    flat = dataclasses.replace(graphs[0], name="flat", runtimes=np.full(24, 3.0))
    message = r"layout:xla:random: left out 2 of 6 graphs with fewer .*: single, flat$"
    with pytest.warns(DagoptWarning, match=message):
        kept, fold, *_ = training_graphs(tiny_run(), [single, *graphs, flat])
    assert kept == graphs and fold.tolist() == fold_of(graphs, 3, seed=0).tolist()


def test_a_companion_graph_takes_its_namesakes_fold_and_one_without_is_left_out():
    graphs = [graph_for("layout", seed=s) for s in range(6)]
    graphs = [dataclasses.replace(g, name=f"program-{i}") for i, g in enumerate(graphs)]
    fold = fold_of(graphs, 3, seed=1)
    others = [dataclasses.replace(graphs[i], name=n) for i, n in ((4, "program-2"), (0, "x"))]
    shared, shared_fold = companion_folds(graphs, fold, others)
    assert [g.name for g in shared] == ["program-2"] and shared_fold.tolist() == [fold[2]]


def test_companions_join_the_training_of_every_fold_but_their_namesakes(tmp_path):
    root = tmp_path / "data"
    for c in ("layout:xla:default", "layout:xla:random"):
        write_synthetic_collection(root, c, graphs={"train": 6}, num_configs=20)
    run = tmp_path / "run"
    config = tiny_run(
        collection="layout:xla:default",
        data=str(root),
        companions=("layout:xla:random",),
        epochs=1,
        train_folds=3,
    )
    train_tgraph(run, config)
    assert load_model(run / "model.pt", expected=TGraphEnsemble)[1]["companion_graphs"] == 6
    assert [read_metrics(run / f"fold-{k}")[0].steps for k in range(3)] == [8, 8, 8]
    for path in write_synthetic_collection(root, "layout:xla:random", graphs={"train": 6}):
        path.rename(path.with_name(f"other-{path.name}"))  # the file name names the program
    with pytest.raises(InputError, match="measures none of the layout:xla:default programs"):
        train_tgraph(tmp_path / "refused", config)
    assert not (tmp_path / "refused").exists()


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    root = tmp_path_factory.mktemp("tpugraphs")
    write_synthetic_collection(
        root, "layout:xla:random", graphs={"train": 4, "test": 1}, num_configs=20
    )
    return root


def dagopt(*args):
    return runner.invoke(app, [str(a) for a in args])


def train_tiny(data, run):
    """``dagopt train tgraph`` of layout:xla:random in ``data``: one epoch of one fold."""
    return dagopt(
        "train", "tgraph", "--collection", "layout:xla:random", "--data", data,
        "--run-dir", run, "--set", "epochs=1", "--set", "folds=2", "--set", "train_folds=1",
        "--set", "keep_folds=1", "--set", 'model={"hidden": 16}',
    )  # fmt: skip


def test_cli_trains_then_ranks(collection, tmp_path):
    run = tmp_path / "run"
    result = train_tiny(collection, run)
    assert result.exit_code == 0, result.output
    assert "fold 0 epoch 0" in result.stdout
    assert "(model.pt; per fold in fold-K/: model.pt, metrics.csv" in result.stdout
    test = collection / "npz/layout/xla/random/test/synthetic-test-000.npz"
    out = tmp_path / "sub.csv"
    result = dagopt(
        "rank", test, "--model", run / "model.pt", "--top", "3", "--tta", "2",
        "--out", out, "--collection", "layout:xla:random",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("synthetic-test-000: 20 configurations")
    ranking = read_submission(out)["layout:xla:random:synthetic-test-000"]
    assert sorted(ranking) == list(range(20))
    assert [int(line.split()[1]) for line in lines[2:5]] == ranking[:3].tolist()


def test_cli_resume_takes_the_run_s_own_values_and_names_a_changed_one(collection, tmp_path):
    run = tmp_path / "run"
    first = train_tiny(collection, run)
    assert first.exit_code == 0, first.output
    same = dagopt("train", "tgraph", "--run-dir", run, "--resume", "--set", "epochs=1")
    assert same.exit_code == 0, same.output
    other = dagopt("train", "tgraph", "--run-dir", run, "--resume", "--set", "epochs=2")
    assert other.exit_code == 2 and "config.json (epochs differs)" in other.stderr


def test_cli_warns_in_one_line_of_a_graph_left_out(collection, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(collection, data)
    train = data / "npz/layout/xla/random/train"
    record = read_tpugraphs(train / "synthetic-train-000.npz")
    flat = np.full_like(record.config_runtime, 7)
    write_tpugraphs(dataclasses.replace(record, config_runtime=flat), train / "flat.npz")
    result = train_tiny(data, tmp_path / "run")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[0] == (
        "warning: layout:xla:random: left out 1 of 5 graphs with fewer than 2 "
        "configurations with different runtimes (nothing to rank): flat.npz"
    )


def test_cli_errors_are_one_line(collection, tmp_path):
    test = collection / "npz/layout/xla/random/test/synthetic-test-000.npz"
    tile_model, layout_model = tmp_path / "tile.pt", tmp_path / "layout.pt"
    graph = graph_for("tile")
    save_model(tile_model, model_for(CONFIGS["tgraph-tile"], [graph]), {})
    layout = model_for(CONFIGS["tgraph-layout"], [graph_for("layout")])
    save_model(layout_model, layout, {"collection": "layout:xla:random"})
    unlabelled_model = save_model(tmp_path / "unlabelled.pt", layout, {})
    inferred = dagopt("rank", test, "--model", layout_model, "--out", tmp_path / "i.csv")
    assert inferred.exit_code == 0, inferred.output  # the model's collection
    assert "layout:xla:random:synthetic-test-000" in (tmp_path / "i.csv").read_text()
    (tmp_path / "x.npz").write_text("nope")
    cases = [
        (["rank", test], "a layout graph: pass --collection"),
        (["rank", test, "--collection", "tile:xla"], "not one of collection tile:xla"),
        (["rank", test, "--collection", "layout:foo:bar"], "unknown collection"),
        (["rank", test, "--model", tile_model], "a layout graph, but the model ranks tile"),
        (["rank", tmp_path / "x.npz", "--model", tile_model], "not an npz archive"),
        (
            ["rank", test, "--model", unlabelled_model, "--out", tmp_path / "o.csv"],
            "needs --collection (the model records none)",
        ),
        (
            ["rank", test, "--model", layout_model, "--collection", "layout:nlp:random"],
            "layout.pt is a model of layout:xla:random, not of collection layout:nlp:random",
        ),
        (["rank", test, "--model", layout_model, "--collection", "layout:foo"], "unknown coll"),
        (
            [
                "train",
                "tgraph",
                "--collection",
                "layout:xla:random",
                "--data",
                collection,
                "--run-dir",
                tmp_path / "r",
                "--set",
                'splits=["test"]',
            ],
            "training needs runtimes",
        ),
    ]
    for args, message in cases:
        result = dagopt(*args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_planted_runtimes_follow_their_rule(tmp_path):
    record = synthetic_layout_record(4, runtimes="planted")
    again = synthetic_layout_record(4, runtimes="planted")
    np.testing.assert_array_equal(record.config_runtime, again.config_runtime)
    random = synthetic_layout_record(4)
    np.testing.assert_array_equal(random.node_config_feat, record.node_config_feat)
    assert not np.array_equal(random.config_runtime, record.config_runtime)
    with pytest.raises(InputError, match="runtimes must be one of"):
        synthetic_tile_record(0, runtimes="measured")
    paths = write_synthetic_collection(
        tmp_path, "tile:xla", graphs={"train": 2, "test": 1}, runtimes="planted"
    )
    assert [p.parent.name for p in paths] == ["test", "train", "train"]


MEASURED = Path(__file__).resolve().parents[1] / "datasets" / "configs"


def test_rank_uses_the_model_shipped_for_the_collection():
    """Without --model, ``dagopt rank`` uses the shipped model of the file's collection
    (a tile file's is tile:xla; a layout file names its collection). The shipped
    TGraph models themselves (tests/conftest.py copies them)."""
    tile = sorted((MEASURED / "npz/tile/xla/test").glob("*.npz"))[0]
    result = dagopt("rank", tile, "--top", "3", "--tta", "2")
    assert result.exit_code == 0, result.output
    assert "64 configurations, predicted fastest first" in result.stdout
    layout = sorted((MEASURED / "npz/layout/nlp/default/test").glob("*.npz"))[0]
    result = dagopt("rank", layout, "--collection", "layout:nlp:default", "--tta", "2")
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 2 + 5 + 1


def test_rank_scores_its_ranking_against_the_runtimes_a_file_holds():
    """A measured file's ranking is printed with each configuration's runtime over the
    fastest and the whole ranking's Kendall tau, both from the file's runtimes."""
    path = sorted((MEASURED / "npz/layout/nlp/random/test").glob("*.npz"))[0]
    result = dagopt("rank", path, "--collection", "layout:nlp:random", "--tta", "2", "--top", "3")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert re.search(
        r"ranked in [\d.e-]+ s \(\+ [\d.e-]+ s reading the file and the model\)", lines[0]
    )
    runtimes = read_tpugraphs(path).config_runtime
    relative = runtimes / runtimes.min()
    rows = [line.split() for line in lines[2:5]]
    assert [float(row[3]) for row in rows] == [round(relative[int(row[1])], 3) for row in rows]
    scores = predict(
        load_ranker(model_path(shipped_model_name("layout:nlp:random"))),
        prepare(read_tpugraphs(path)),
        permutations=2,
    )
    assert lines[5] == (
        f"measured runtimes in the file: Kendall tau {kendall_tau(scores, runtimes):.3f}; "
        f"the best of the top 3 runs {min(float(row[3]) for row in rows):.3f}x the fastest"
    )


def test_rank_checks_out_before_ranking_and_knows_a_tile_files_collection(tmp_path):
    """An --out that cannot be written fails before any ranking is printed; a tile
    file's submission ID is tile:xla without --collection."""
    tile = sorted((MEASURED / "npz/tile/xla/test").glob("*.npz"))[0]
    result = dagopt("rank", tile, "--tta", "1", "--out", tmp_path)
    assert result.exit_code == 2 and "is a directory, not a file" in result.stderr
    assert result.stdout == ""
    out = tmp_path / "sub.csv"
    result = dagopt("rank", tile, "--tta", "1", "--out", out)
    assert result.exit_code == 0, result.output
    assert list(read_submission(out)) == [f"tile:xla:{tile.stem}"]


def test_rank_takes_a_folder_scores_the_collection_and_writes_one_submission(tmp_path):
    """A folder of files is ranked file by file into one submission CSV (a row per
    file), and the measured files' collection metric is the one evaluation computes."""
    folder = MEASURED / "npz/tile/xla/test"
    out = tmp_path / "sub.csv"
    result = dagopt("rank", folder, "--tta", "1", "--top", "1", "--out", out)
    assert result.exit_code == 0, result.output
    files = sorted(folder.glob("*.npz"))
    assert sorted(read_submission(out)) == sorted(f"tile:xla:{f.stem}" for f in files)
    model = load_ranker(model_path(shipped_model_name("tile:xla")))
    graphs = [prepare(read_tpugraphs(f)) for f in files]
    expected = evaluate(model, graphs, permutations=1)
    assert f"{len(files)} measured tile files: mean tile metric (eq. 10) {expected:.3f}" in (
        result.stdout
    )


def test_open_ranking_reads_a_model_file_once_across_files():
    """Ranking a folder reads its model file once: ``loaded`` keeps it across calls."""
    first, second = sorted((MEASURED / "npz/tile/xla/test").glob("*.npz"))[:2]
    loaded: dict = {}
    a, b = (open_ranking(path, loaded=loaded) for path in (first, second))
    assert a.model is b.model and len(loaded) == 1
    assert open_ranking(first).model is not a.model  # without it, read afresh


def test_rank_refuses_a_batch_it_cannot_finish_before_ranking(tmp_path):
    """Two files of one name, an empty folder or a missing file among the inputs are one
    line and exit 2 before any ranking is printed or any CSV written."""
    tile = sorted((MEASURED / "npz/tile/xla/test").glob("*.npz"))[0]
    (tmp_path / "other").mkdir()
    shutil.copy(tile, tmp_path / "other" / tile.name)
    (tmp_path / "empty").mkdir()
    out = tmp_path / "sub.csv"
    cases = [
        ([tile, tmp_path / "other"], "would share one submission ID"),
        ([tmp_path / "empty"], "no TpuGraphs files (.npz)"),
        ([tile, tmp_path / "missing.npz"], "missing.npz: no such file"),
    ]
    for paths, message in cases:
        result = dagopt("rank", *paths, "--tta", "1", "--out", out)
        assert result.exit_code == 2 and message in result.stderr, result.output
        assert result.stdout == "" and not out.exists()


@pytest.mark.parametrize("collection", ["layout:nlp:random", "layout:xla:default"])
def test_shipped_models_rank_held_out_graphs_well_above_chance(collection):
    """The shipped layout models on the held-out architectures of the measured dataset
    (their test split, never trained on): a mean Kendall tau far from chance (0), as
    measured in docs/tgraph.md; a broken or untrained model fails this."""
    model = load_ranker(model_path(shipped_model_name(collection)))
    graphs = load_graphs(MEASURED, collection, ["test"], deduplicate=False)
    assert evaluate(model, graphs, permutations=2) > 0.3
