"""Model zoo: the catalogue, exports of the smallest models, the cache, the CLI, errors.

The slow tests export every model in both modes and check the 60 s budget per export.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import dagopt.io.torch
from dagopt.cli.main import app
from dagopt.errors import InputError
from dagopt.graph.shares import share_nodes
from dagopt.io import load
from dagopt.io.json import graph_to_node_link
from dagopt.objectives import peak_memory
from dagopt.zoo import (
    HELD_OUT_MODELS,
    MODELS,
    SIZES,
    cache_path,
    export_zoo,
    export_zoo_graph,
    get_model,
    model_names,
    parse_zoo_key,
)
from dagopt.zoo.models import (
    CHECK_TRANSFORMERS,
    CONV_SHAPE_MODELS,
    DEV_DECODERS,
    HGNET_V2_MODELS,
    PATCH_EMBEDDING_MODELS,
    SIZE_VARIANT_MODELS,
)

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]

REQUIRED = {
    "bert-base",
    "gpt2",
    "t5-small",
    "vit-base",
    "resnet-50",
    "convnext-tiny",
    "swin-tiny",
    "mobilenet-v2",
    "whisper-tiny-encoder",
    "llama-small",
}
#: The two fastest exports (small size, inference) and their plausible node counts.
SMALLEST = {"whisper-tiny-encoder": (80, 250), "convnext-tiny": (120, 300)}
EXPORT_BUDGET_S = 60.0


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A cache directory holding the small inference graphs of the two smallest models."""
    root = tmp_path_factory.mktemp("zoo-cache")
    for name in SMALLEST:
        export_zoo(name, cache_dir=root)
    return root


def test_catalogue_lists_the_required_architectures():
    assert set(model_names()) >= REQUIRED
    assert len(set(model_names())) == len(MODELS)
    for model in MODELS:
        assert model.family and model.description
        assert set(model.inputs) == set(SIZES)


@pytest.mark.parametrize("name", sorted(SMALLEST))
def test_smallest_models_export_valid_graphs_in_file_order(cache, name):
    graph = export_zoo_graph(name, cache_dir=cache)
    low, high = SMALLEST[name]
    assert low <= graph.num_nodes <= high
    src, dst = graph.edges
    assert np.all(src < dst)  # the file order (the traced order) is topological
    assert graph.is_topological(np.arange(graph.num_nodes))
    assert graph.op[0] == "input" and graph.op[-1] == "output"
    assert graph.mem.sum() > 0 and graph.param_mem.sum() > 0
    assert peak_memory(graph, np.arange(graph.num_nodes)) > 0


def test_cache_hit_returns_the_identical_graph_without_exporting(cache, monkeypatch):
    calls = []

    def counting(*args, **kwargs):
        calls.append(args)
        return graph_from_module(*args, **kwargs)

    graph_from_module = dagopt.io.torch.graph_from_module
    monkeypatch.setattr(dagopt.io.torch, "graph_from_module", counting)
    name = "whisper-tiny-encoder"
    first = export_zoo(name, cache_dir=cache)
    again = export_zoo(name, cache_dir=cache)
    assert first.cached and again.cached
    assert calls == []
    assert graph_to_node_link(again.graph) == graph_to_node_link(first.graph)
    fresh = export_zoo(name, cache_dir=cache, refresh=True)
    assert not fresh.cached and len(calls) == 1
    assert graph_to_node_link(fresh.graph) == graph_to_node_link(first.graph)
    assert fresh.param_bytes == first.param_bytes > 0


def test_cache_location_keys_and_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGOPT_ZOO_CACHE", str(tmp_path))
    path = cache_path("gpt2", "large", "training")
    assert path.is_relative_to(tmp_path)
    assert path.name == "gpt2-large-training.json"
    joint = cache_path("gpt2", "large", "training", split_outputs=False)
    assert joint.name == "gpt2-large-training-joint.json"
    for package in ("dagopt", "torch", "transformers"):
        assert package in path.parent.name


def test_unreadable_cache_file_is_exported_again(tmp_path):
    name = "whisper-tiny-encoder"
    path = cache_path(name, "small", "inference", tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("{truncated")
    result = export_zoo(name, cache_dir=tmp_path)
    assert not result.cached
    assert json.loads(path.read_text())["graph"]["zoo"]["model"] == name


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: get_model("alexnet"), "unknown zoo model 'alexnet' (models: bert-base, gpt2"),
        (lambda: export_zoo_graph("gpt2", size="huge"), "unknown size 'huge'"),
        (lambda: export_zoo_graph("gpt2", mode="eval"), "unknown mode 'eval'"),
        (lambda: parse_zoo_key("gpt2"), "zoo graph 'gpt2' is not model/size/mode"),
        (lambda: parse_zoo_key("gpt2/small/eval"), "unknown mode 'eval'"),
    ],
)
def test_bad_requests_raise_one_line_input_errors(call, message):
    with pytest.raises(InputError, match=r"^[^\n]*$") as info:
        call()
    assert message in str(info.value)


def test_cli_export_writes_the_graph_and_one_summary_line(cache, tmp_path):
    out = tmp_path / "g.json"
    args = ["zoo", "export", "convnext-tiny", "--mode", "inference", "--out", str(out)]
    result = runner.invoke(app, [*args, "--cache-dir", str(cache)])
    assert result.exit_code == 0, result.output
    graph = load(out)
    (line,) = result.stdout.strip().splitlines()
    assert f"{graph.num_nodes} nodes, {graph.num_edges} edges" in line
    assert "parameter bytes" in line and "cache hit" in line


def test_cli_export_joint_outputs_is_cached_apart(tmp_path):
    """By default each extra output storage gets a node (``<name>.<j>``, marked ``share``
    in the file); ``--joint-outputs`` gives one node per operator, in its own cache file."""
    args = ["zoo", "export", "whisper-tiny-encoder", "--mode", "training"]
    args += ["--cache-dir", str(tmp_path)]
    split = runner.invoke(app, [*args, "--out", str(tmp_path / "split.json")])
    joint = runner.invoke(app, [*args, "--joint-outputs", "--out", str(tmp_path / "joint.json")])
    again = runner.invoke(app, [*args, "--joint-outputs"])
    assert joint.exit_code == split.exit_code == again.exit_code == 0, joint.output
    assert "joint outputs" in joint.stdout and "cache miss" in joint.stdout
    assert "joint outputs" not in split.stdout and "cache hit" in again.stdout
    joint_graph, split_graph = load(tmp_path / "joint.json"), load(tmp_path / "split.json")
    shares = [split_graph.names[v] for v in share_nodes(split_graph)]
    assert shares and all("." in name for name in shares)  # <name>.<j>
    assert share_nodes(joint_graph).size == 0 and not any("." in n for n in joint_graph.names)
    assert split_graph.num_nodes == joint_graph.num_nodes + len(shares)
    assert split_graph.mem.sum() == joint_graph.mem.sum()


def test_cli_export_autograd_operators_is_cached_apart(tmp_path):
    """``--no-core-aten`` keeps the fused backward kernels eager autograd runs (fewer
    nodes than core ATen) in a cache file of its own; inference graphs have no variant."""
    args = ["zoo", "export", "whisper-tiny-encoder", "--cache-dir", str(tmp_path)]
    core = runner.invoke(app, [*args, "--mode", "training", "--out", str(tmp_path / "c.json")])
    ops = runner.invoke(
        app, [*args, "--mode", "training", "--no-core-aten", "--out", str(tmp_path / "o.json")]
    )
    assert core.exit_code == ops.exit_code == 0, ops.output
    assert "autograd operators" in ops.stdout and "cache miss" in ops.stdout
    core_graph, ops_graph = load(tmp_path / "c.json"), load(tmp_path / "o.json")
    assert "aten.native_layer_norm_backward.default" in ops_graph.op
    assert "aten.native_layer_norm_backward.default" not in core_graph.op
    assert ops_graph.num_nodes < core_graph.num_nodes
    inference = cache_path("whisper-tiny-encoder", "small", "inference", tmp_path, core_aten=False)
    assert inference == cache_path("whisper-tiny-encoder", "small", "inference", tmp_path)


def test_cli_measure_runs_the_graph_in_its_orders_and_eager(tmp_path):
    """``zoo measure``: the traced order, an order file and eager PyTorch, measured; an
    order of another graph or a missing file is a one-line error with exit code 2."""
    graph_file, order_file = tmp_path / "w.json", tmp_path / "w-order.json"
    variant = ["--mode", "training", "--split-outputs", "--no-core-aten"]
    args = ["zoo", "export", "whisper-tiny-encoder", *variant, "--cache-dir", str(tmp_path)]
    assert runner.invoke(app, [*args, "--out", str(graph_file)]).exit_code == 0
    schedule = ["schedule", str(graph_file), "--method", "approx-dp", "--beam-width", "100"]
    result = runner.invoke(app, [*schedule, "--keep-outputs", "--out", str(order_file)])
    assert result.exit_code == 0, result.output
    measure = ["zoo", "measure", "whisper-tiny-encoder", *variant]
    result = runner.invoke(app, [*measure, str(order_file)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if "│" in line}
    assert set(rows) == {"traced", "w-order.json (approx-dp)", "eager PyTorch"}
    for label in ("traced", "w-order.json (approx-dp)"):
        cells = [cell.strip() for cell in rows[label].split("│")]
        assert cells[4] == "+0.00"  # measured - predicted %
    other = runner.invoke(app, [*measure[:3], "--mode", "inference", str(order_file)])
    assert other.exit_code == 2
    assert len(other.output.strip().splitlines()) == 1 and "is not in graph" in other.output
    missing = runner.invoke(app, [*measure, str(tmp_path / "none.json")])
    assert missing.exit_code == 2 and "no such order file" in missing.output


def test_cli_list_shows_cached_node_counts(cache):
    result = runner.invoke(app, ["zoo", "list", "--cache-dir", str(cache)])
    assert result.exit_code == 0, result.output
    nodes = export_zoo_graph("whisper-tiny-encoder", cache_dir=cache).num_nodes
    for name in REQUIRED:
        assert name[:16] in result.stdout
    assert f"{nodes} / -" in result.stdout


def test_cli_unknown_model_is_a_one_line_error_with_exit_2():
    result = runner.invoke(app, ["zoo", "export", "alexnet", "--mode", "training"])
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: unknown zoo model 'alexnet' (models: ")
    assert "whisper-tiny-encoder" in line


def test_cli_missing_mode_is_one_line_without_tabs():
    result = runner.invoke(app, ["zoo", "export", "gpt2"])
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "\t" not in line and line.startswith("error: Missing option '--mode'")
    assert "inference, training" in line


def test_cli_refuses_to_write_over_the_zoo_cache_file(tmp_path):
    from dagopt.zoo.export import cache_path

    cached = cache_path("gpt2", "small", "inference", tmp_path)
    args = ["zoo", "export", "gpt2", "--mode", "inference", "--cache-dir", str(tmp_path)]
    result = runner.invoke(app, [*args, "--out", str(cached)])
    assert result.exit_code == 2 and "is the zoo's cache file" in result.output
    assert not cached.exists()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["inference", "training"])
@pytest.mark.parametrize("name", [model.name for model in MODELS])
def test_every_model_exports_within_budget(tmp_path, record_property, name, mode):
    result = export_zoo(name, mode=mode, cache_dir=tmp_path)
    record_property("export_seconds", round(result.seconds, 2))
    record_property("nodes", result.graph.num_nodes)
    print(f"{name} small {mode}: {result.graph.num_nodes} nodes, {result.seconds:.1f} s")
    assert not result.cached
    assert result.seconds <= EXPORT_BUDGET_S
    src, dst = result.graph.edges
    assert np.all(src < dst)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, mode", [("gpt2", "inference"), ("bert-base", "inference"), ("gpt2", "training")]
)
def test_zoo_flops_equal_flop_counter_mode(tmp_path, name, mode):
    """The importer's FLOPs (docs/real_models.md) total what torch's FlopCounterMode counts
    for the same forward (training: forward and backward of the summed output)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    graph = export_zoo(name, mode=mode, cache_dir=tmp_path).graph
    module, inputs = get_model(name).build("small")
    with FlopCounterMode(display=False) as counter:
        if mode == "inference":
            with torch.no_grad():
                module(*inputs)
        else:
            module.train()
            module(*inputs).sum().backward()
    assert graph.node_data["flops"].sum() == counter.get_total_flops() > 0


def test_inception_v3_has_the_published_layers():
    """Inception-V3 without the auxiliary classifier: torchvision's 23,834,568 weights,
    17 stem and module stages, 94 convolutions, logits for a small or the full input."""
    import torch

    module, (image,) = get_model("inception-v3").build("small")
    assert sum(p.numel() for p in module.parameters()) == 23_834_568
    assert sum(isinstance(m, torch.nn.Conv2d) for m in module.modules()) == 94
    with torch.no_grad():
        assert module(image).shape == (1, 1000)
    assert get_model("inception-v3").inputs == {"small": "149x149 px", "large": "299x299 px"}


#: Parameters of the held-out CNNs, as docs/zoo.md lists them: torchvision's counts for
#: DenseNet-121, SqueezeNet 1.1 and ShuffleNet V2; GoogLeNet with its published 5x5
#: branch, which torchvision replaced by a 3x3; RandWire-WS small about "5.6M" (Xie et
#: al., Table 2); EfficientNet-B0 and MobileViT-S as ``transformers`` builds them.
HELD_OUT_PARAMETERS = {
    "densenet-121": 7_978_856,
    "squeezenet-1.1": 1_235_496,
    "shufflenet-v2": 2_278_604,
    "googlenet": 7_005_832,
    "randwire-ws-1": 5_616_670,
    "randwire-ws-2": 5_477_914,
    "efficientnet-b0": 5_288_548,
    "mobilevit-small": 5_578_632,
}


def test_held_out_cnns_are_listed_apart_and_found_by_name():
    held_out = model_names(held_out=True)
    assert len(held_out) == len(HELD_OUT_MODELS) == 8
    assert not set(held_out) & set(model_names())
    for model in HELD_OUT_MODELS:
        assert model.held_out and get_model(model.name) is model
        assert model.inputs == {"small": "2 x 64x64 px", "large": "2 x 224x224 px"}


@pytest.mark.parametrize("name", sorted(HELD_OUT_PARAMETERS))
def test_held_out_cnns_have_the_published_parameter_counts(name):
    module, _ = get_model(name).build("small")
    assert sum(p.numel() for p in module.parameters()) == HELD_OUT_PARAMETERS[name]


def _assert_training_only_with_counts(counts: dict[str, int]) -> None:
    """Each model is outside the catalogue and the held-out set and has ``counts[name]``
    parameters at 224 px."""
    assert not set(counts) & set(model_names() + model_names(held_out=True))
    for name, count in counts.items():
        module, _ = get_model(name).build("large")
        assert sum(p.numel() for p in module.parameters()) == count


def test_patch_embedding_models_have_the_published_sizes_and_stride_window_convs():
    """PVT-Tiny 13.2 M and PVTv2-B0 3.7 M parameters at 224 px (Wang et al. 2021,
    2022), exportable by name, outside the catalogue; their groups-1 convs at 64 px
    are the stride = window kind the configuration dataset's wave 2 is for."""
    import torch

    published = {"pvt-tiny": 13_229_288, "pvt-v2-b0": 3_666_760}
    assert {m.name for m in PATCH_EMBEDDING_MODELS} == set(published)
    _assert_training_only_with_counts(published)
    module, inputs = get_model("pvt-tiny").build("small")
    assert module(*inputs).shape == (1, 1000)
    convs = [m for m in module.modules() if isinstance(m, torch.nn.Conv2d)]
    assert len(convs) == 10 and all(m.stride == m.kernel_size for m in convs)


def test_conv_shape_models_have_the_published_sizes_and_are_not_held_out():
    """The configuration dataset's wave 3 backbones at 224 px and 1000 classes: ResNet-18
    11,689,512 parameters (torchvision's count), RegNetY-4.0GF 20.6 M, SwiftFormer-XS
    3.5 M, PoolFormer-S12 11.9 M, CvT-13 20.0 M (their papers); DINOv2's ViT-B/14 with
    its 1536-input classifier head. Exportable by name, outside the catalogue."""
    import torch

    counts = {
        "regnet-y-040": 20_646_656,
        "swiftformer-xs": 3_475_360,
        "resnet-18": 11_689_512,
        "poolformer-s12": 11_915_176,
        "cvt-13": 19_997_480,
        "dinov2-base": 87_262_696,
    }
    assert [m.name for m in CONV_SHAPE_MODELS] == list(counts)
    _assert_training_only_with_counts(counts)
    module, inputs = get_model("dinov2-base").build("small")  # 64 px: embeddings interpolate
    assert module(*inputs).shape == (1, 1000)
    assert any(isinstance(m, torch.nn.Conv2d) and m.stride == (14, 14) for m in module.modules())


def test_size_variant_models_have_the_published_parameter_counts():
    """The configuration dataset's wave 4 backbones at 224 px and 1000 classes, with the
    parameter counts their papers publish: RegNetX-200MF 2.7 M, RegNetX-400MF 5.2 M,
    RegNetY-1.6GF 11.2 M, RegNetX-3.2GF 15.3 M, RegNetY-8.0GF 39.2 M (Radosavovic et al.
    2020), SwiftFormer-S 6.1 M, SwiftFormer-L1 12.1 M (Shaker et al. 2023), PoolFormer-M36
    56.2 M (Yu et al. 2022). Exportable by name, outside the catalogue."""
    counts = {
        "regnet-x-002": 2_684_792,
        "regnet-x-004": 5_157_512,
        "regnet-y-016": 11_202_430,
        "regnet-x-032": 15_296_552,
        "regnet-y-080": 39_180_068,
        "swiftformer-s": 6_092_128,
        "swiftformer-l1": 12_057_920,
        "poolformer-m36": 56_172_520,
    }
    assert [m.name for m in SIZE_VARIANT_MODELS] == list(counts)
    _assert_training_only_with_counts(counts)
    module, inputs = get_model("regnet-x-002").build("small")
    assert module(*inputs).shape == (1, 1000)


def test_hgnet_v2_models_have_the_published_backbones():
    """The configuration dataset's wave 5, PP-HGNetV2 B0-B6 at 224 px: ``transformers``'
    classifier pools the last stage (``width`` channels) straight into the 1000-class
    layer, where PaddleClas' head first widens it to 2048 channels with a 1 x 1
    convolution; with that head the counts are the published 6.0, 6.3, 11.2, 16.3, 19.8,
    39.6 and 75.3 M parameters. The 64 px build runs: its classifier head is a
    ``ModuleList`` whose pooling is shared with the model, which the zoo's tied-module
    handling must leave registered."""
    counts = {  # name: (parameters without PaddleClas' head, width, published M with it)
        "hgnet-v2-b0": (2_875_396, 1024, 6.0),
        "hgnet-v2-b1": (3_222_004, 1024, 6.3),
        "hgnet-v2-b2": (7_563_626, 1536, 11.2),
        "hgnet-v2-b3": (12_097_910, 2048, 16.3),
        "hgnet-v2-b4": (15_602_376, 2048, 19.8),
        "hgnet-v2-b5": (35_374_760, 2048, 39.6),
        "hgnet-v2-b6": (71_062_472, 2048, 75.3),
    }
    for count, width, published in counts.values():
        assert round((count + width * 2048 + (2048 - width) * 1000) / 1e6, 1) == published
    assert [m.name for m in HGNET_V2_MODELS] == list(counts)
    _assert_training_only_with_counts({name: c for name, (c, _, _) in counts.items()})
    module, inputs = get_model("hgnet-v2-b0").build("small")
    assert module(*inputs).shape == (1, 1000)
    assert module.model.fc.in_features == counts["hgnet-v2-b0"][1]


#: The check transformers' published parameter counts (their model cards: 13.5 M,
#: 24.6 M without the pooler, 134.5 M, 494 M, 331 M, 1.42 B).
CHECK_COUNTS = {
    "electra-small": 13_483_008,
    "mobilebert": 24_581_888,
    "smollm-135m": 134_515_008,
    "qwen2-0.5b": 494_032_768,
    "opt-350m": 331_196_416,
    "phi-1.5": 1_418_270_720,
}


def test_check_transformers_have_attention_shapes_no_nlp_architecture_has():
    """The configuration dataset's check set (issue 20): six transformers outside the
    catalogue and the held-out set whose query projections (width, heads) differ from
    every ``nlp`` architecture's, read from the two shape caches the dataset commits;
    the three smaller ones have their published parameter counts."""
    from dagopt.rank.configs.build import EXTRA_MODELS, MODELS, _drawable_layers
    from dagopt.rank.configs.zoo_shapes import zoo_layers

    assert [m.name for m in CHECK_TRANSFORMERS] == list(CHECK_COUNTS)
    assert not set(CHECK_COUNTS) & set(model_names() + model_names(held_out=True))

    def attention(cache: str, models) -> set[tuple[int, int]]:
        """(width, heads) of the query projections the ``nlp`` programs are built from."""
        layers = zoo_layers(list(models), ROOT / "datasets" / cache / "zoo_shapes.json")
        return {(x.cin, x.heads) for m in models for x in _drawable_layers("layout-nlp", layers[m])}

    nlp = MODELS["layout-nlp"] + EXTRA_MODELS["layout-nlp"]
    check = attention("configs-check", CHECK_COUNTS)
    assert len(check) == 6 and not check & attention("configs", nlp)
    small = ("electra-small", "mobilebert", "smollm-135m")
    _assert_training_only_with_counts({name: CHECK_COUNTS[name] for name in small})


@pytest.mark.slow
def test_the_large_check_transformers_have_their_published_parameter_counts():
    """Qwen2-0.5B, OPT-350M and Phi-1.5 (about 9 GB of float32 weights in all)."""
    large = ("qwen2-0.5b", "opt-350m", "phi-1.5")
    _assert_training_only_with_counts({name: CHECK_COUNTS[name] for name in large})


DEV_DECODER_COUNTS = {
    "pythia-160m": 162_322_944,
    "gpt-neo-125m": 125_198_592,
    "bloom-560m": 559_214_592,
    "gemma3-270m": 268_098_176,
    "olmo-1b": 1_176_764_416,
    "tinyllama-1.1b": 1_100_048_384,
}


def test_development_decoders_are_outside_the_held_out_and_check_sets():
    """``anytime``'s development decoders: none in the catalogue, the held-out set or the
    check transformers; the two smallest have their published parameter counts."""
    assert [m.name for m in DEV_DECODERS] == list(DEV_DECODER_COUNTS)
    assert not set(DEV_DECODER_COUNTS) & set(CHECK_COUNTS)
    small = ("pythia-160m", "gpt-neo-125m")
    _assert_training_only_with_counts({name: DEV_DECODER_COUNTS[name] for name in small})


@pytest.mark.slow
def test_the_larger_development_decoders_have_their_published_parameter_counts():
    """BLOOM-560M, Gemma 3 270M, OLMo-1B and TinyLlama-1.1B (about 12 GB of float32
    weights in all, one at a time)."""
    large = ("bloom-560m", "gemma3-270m", "olmo-1b", "tinyllama-1.1b")
    _assert_training_only_with_counts({name: DEV_DECODER_COUNTS[name] for name in large})


def test_randwire_stages_are_seeded_watts_strogatz_dags():
    """Edges run from lower to higher node ids; one seed, one graph; the two held-out
    seeds differ; the small regime has about 5.6 M parameters and runs a batch."""
    import torch

    from dagopt.zoo.multibranch import randwire_ws, watts_strogatz_dag

    preds = watts_strogatz_dag(32, seed=7)
    assert preds == watts_strogatz_dag(32, seed=7) != watts_strogatz_dag(32, seed=8)
    assert all(u < v for v, p in enumerate(preds) for u in p)
    assert sum(map(len, preds)) == 32 * 4 // 2
    one, two = randwire_ws(1), randwire_ws(2)
    assert [s.preds for s in one[5:8]] != [s.preds for s in two[5:8]]
    assert 5.3e6 < sum(p.numel() for p in one.parameters()) < 5.9e6
    module, (image,) = get_model("randwire-ws-1").build("small")
    with torch.no_grad():
        assert module(image).shape == (2, 1000)


@pytest.mark.slow
def test_paper_004_graphs_have_openvinos_op_counts():
    """OpenVINO 2026 reads Inception-V3 at 299 px as 316 ops (218 of them not constant)."""
    pytest.importorskip("openvino")
    from dagopt.io.openvino import convert_openvino, graph_from_openvino

    module, inputs = get_model("inception-v3").build("large")
    model = convert_openvino(module, example_input=inputs)
    assert len(model.get_ordered_ops()) == 316
    assert graph_from_openvino(model).num_nodes == 218
