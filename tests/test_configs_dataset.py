"""The measured configuration dataset: TVM kernels under tilings and layouts, the timing
protocol, the TpuGraphs files ``dagopt generate configs`` writes, resume, missing TVM."""

import json
import shutil
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dagopt.cli.main import app
from dagopt.errors import InputError
from dagopt.io.tpugraphs import LayoutRecord, TileRecord, collection_files, read_tpugraphs

tvm = pytest.importorskip("tvm")

from dagopt.integrations.tvm import require_tvm  # noqa: E402
from dagopt.integrations.tvm.layout import (  # noqa: E402
    VECTOR_LANES,
    LayoutPrograms,
    program_calls,
    random_config,
    reference,
)
from dagopt.integrations.tvm.measure import machine, measure_programs  # noqa: E402
from dagopt.integrations.tvm.tile import (  # noqa: E402
    TileKernel,
    Tiling,
    bound_program,
    compile_kernel,
    random_inputs,
    schedule,
)
from dagopt.integrations.tvm.tile import reference as tile_reference  # noqa: E402
from dagopt.rank.configs.build import (  # noqa: E402
    CHECK_MODELS,
    CHECK_SEED,
    DRAWN_CONV_RANGES,
    EXTRA_MODELS,
    EXTRA_SEEDS,
    EXTRA_WAVES,
    LENGTH_RANGE,
    LENGTHS_SEED,
    MODELS,
    SPLITS,
    BuildOptions,
    build_collection,
    plan_graphs,
    read_sidecar,
    split_of,
    timed_on,
)
from dagopt.rank.configs.layout import nlp_graph, xla_graph  # noqa: E402
from dagopt.rank.configs.zoo_shapes import LayerShape  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHAPES = ROOT / "datasets" / "configs" / "zoo_shapes.json"
runner = CliRunner()

DENSE = TileKernel("dense", "gelu", m=8, n=32, k=48)
CONV = TileKernel("conv2d", "relu", cin=6, cout=8, size=9, kernel=3, stride=2, pad=1)
CONV_LAYER = LayerShape("resnet-50", "conv2d", 6, 8, 9, kernel=3, stride=2, pad=1)
LINEAR_LAYER = LayerShape("bert-base", "linear", 32, 32, 8, heads=4)


@pytest.mark.parametrize(
    ("kernel", "tiling"),
    [
        (DENSE, Tiling((4, 8), 16, 0, False, True)),
        (DENSE, Tiling((2, 16), 8, 1, True, False)),
        (CONV, Tiling((1, 4, 2, 5), 2, 2, False, True)),
        (CONV, Tiling((1, 2, 5, 5), 3, 1, True, True)),
    ],
)
def test_a_tiling_changes_the_code_not_the_numbers(kernel, tiling):
    assert str(schedule(kernel, tiling)) != str(schedule(kernel, None))
    arrays = random_inputs(kernel, seed=1)
    expected = tile_reference(kernel, *arrays[:3])
    for plan in (None, tiling):
        run, tensors = bound_program(compile_kernel(kernel, plan), arrays)
        run()
        np.testing.assert_allclose(tensors[-1].numpy(), expected, atol=1e-4)


@pytest.mark.parametrize(
    "graph",
    [xla_graph(CONV_LAYER, 5, 10**6), nlp_graph(LINEAR_LAYER, 2, 8, 10**6)],
    ids=["xla", "nlp"],
)
def test_layouts_compute_what_the_default_layout_computes(graph):
    rng = np.random.default_rng(0)
    configs = [graph.default_config()] + [random_config(graph, rng) for _ in range(4)]
    programs = LayoutPrograms(graph, seed=2)
    programs.add(configs)
    expected = reference(graph, programs.parameters())
    results = []
    for config in configs:
        programs.runner(config)()
        results.append(programs.result())
        np.testing.assert_allclose(results[-1], expected, atol=1e-4)
    # non-default layouts really run other code: copies (transposes) and other functions
    keys = [{key for key, _ in program_calls(graph, c)} for c in configs]
    assert all(k != keys[0] for k in keys[1:])
    assert any(key[0] == "copy" for k in keys[1:] for key in k)


def test_the_protocol_records_retest_tau_spread_and_load():
    kernel = DENSE
    arrays = random_inputs(kernel)
    runs = [bound_program(compile_kernel(kernel, t), arrays)[0] for t in (None, None)]
    m = measure_programs(runs, rounds=2, min_batch_ns=10_000)
    assert m.runtime_ns.shape == (2,) and m.runtime_ns.dtype == np.int64
    assert (m.runtime_ns > 0).all() and m.spread >= 1.0 and len(m.load) == 2
    assert np.array_equal(m.runtime_ns, np.rint(np.minimum(m.first_half_ns, m.second_half_ns)))
    with pytest.raises(InputError, match="even"):
        measure_programs(runs, rounds=3)


@pytest.fixture
def root(tmp_path):
    shutil.copy(SHAPES, tmp_path / "zoo_shapes.json")  # no model is built
    return tmp_path


TINY = BuildOptions(graphs=1, configs=4, rounds=2, max_macs=200_000)


def test_a_tiny_generation_writes_files_the_reader_accepts(root):
    (tile,) = build_collection(root, "tile", "random", TINY)
    record = read_tpugraphs(tile)
    assert isinstance(record, TileRecord)
    assert record.config_feat.shape == (4, 24) and record.node_feat.shape[1] == 140
    assert len(set(map(tuple, record.config_feat.tolist()))) == 4  # configurations differ
    assert (record.config_runtime_normalizers == record.config_runtime_normalizers[0]).all()
    assert tile.parent.name == split_of("tile", "resnet-50") == "train"
    assert (root / "npz/tile/xla/measurements.json").is_file()
    for kind, nodes in (("layout-nlp", 4), ("layout-xla", 3)):
        (layout,) = build_collection(root, kind, "default", TINY)
        record = read_tpugraphs(layout)
        assert isinstance(record, LayoutRecord)
        assert record.node_config_feat.shape == (4, nodes, 18)
        assert record.config_runtime.shape == (4,) and (record.config_runtime > 0).all()
        assert collection_files(root, f"layout:{kind[7:]}:default", "train") == [layout]


def test_a_second_run_skips_the_graphs_written(root):
    (path,) = build_collection(root, "layout-nlp", "random", TINY)
    before = path.stat().st_mtime_ns
    assert build_collection(root, "layout-nlp", "random", TINY) == []
    assert path.stat().st_mtime_ns == before
    with pytest.raises(InputError, match="was measured with --rounds 2, not 4"):
        build_collection(root, "layout-nlp", "random", replace(TINY, rounds=4))
    with pytest.raises(InputError, match="was measured with --configs 4, not 200"):
        build_collection(root, "layout-nlp", "random", replace(TINY, configs=None))


def test_a_collection_keeps_the_machine_that_timed_it(root):
    """Runtimes of the same programs on another CPU rank differently, so the sidecar
    names the machine and a collection timed on another one takes no more graphs."""
    (path,) = build_collection(root, "layout-nlp", "random", TINY)
    sidecar = path.parent.parent / "measurements.json"
    (entry,) = json.loads(sidecar.read_text()).values()
    assert entry["machine"] == machine() and "TVM" in entry["machine"]
    figures = json.loads(sidecar.read_text())
    figures[path.stem]["machine"] = "Another CPU (family 23, model 49, stepping 0); TVM 0.27"
    sidecar.write_text(json.dumps(figures))
    with pytest.raises(InputError, match=r"measured on Another CPU .* one machine"):
        build_collection(root, "layout-nlp", "random", replace(TINY, graphs=2))
    del figures[path.stem]["machine"]  # entries from before the machine was recorded
    sidecar.write_text(json.dumps(figures))
    (second,) = build_collection(root, "layout-nlp", "random", replace(TINY, graphs=2))
    names = [path.stem, second.stem]
    recorded = read_sidecar(root, "layout:nlp:random")
    assert timed_on(recorded, names) == f"1 not recorded; 1 on {machine()}"
    sidecar.write_text("{not json")
    with pytest.raises(InputError, match="unreadable measurement sidecar"):
        read_sidecar(root, "layout:nlp:random")


def test_extra_architectures_are_a_plan_of_their_own_in_train(root):
    """``--extra`` (issue 20) adds training architectures without moving the original
    plan's graphs, and nothing of it lands in valid or test."""
    base = plan_graphs("layout-xla", root, BuildOptions(graphs=8))
    extra = plan_graphs("layout-xla", root, BuildOptions(graphs=8, extra=1))
    assert {model for model, _ in extra} == set(EXTRA_MODELS["layout-xla"])
    assert base == plan_graphs("layout-xla", root, BuildOptions(graphs=8))
    for kind, models in EXTRA_MODELS.items():
        assert not set(models) & {m for held in SPLITS[kind].values() for m in held}
    assert nlp_graph(LINEAR_LAYER, 1, 0, 10**6) is None  # MobileViT-S: 1 token // 4
    (path,) = build_collection(root, "layout-nlp", "random", replace(TINY, extra=1))
    assert path.parent.name == "train" and path.name.startswith("mobilevit-small.")


def test_a_later_extra_wave_leaves_the_earlier_plans_and_the_held_out_splits_alone(root):
    """``--extra-wave 2`` (issue 20): patch-embedding vision transformers, whose convs
    have stride = window (the held-out ConvNeXt-T's and Swin-T's kind), all in train;
    wave 1's plan is unchanged by it."""
    first = plan_graphs("layout-xla", root, BuildOptions(graphs=8, extra=1))
    second = plan_graphs("layout-xla", root, BuildOptions(graphs=30, extra=2))
    assert {model for model, _ in second} == set(EXTRA_WAVES[1]["layout-xla"])
    assert first == plan_graphs("layout-xla", root, BuildOptions(graphs=8, extra=1))
    assert not {g.name for _, g in first} & {g.name for _, g in second}
    patches = [g for _, g in second if g.ops[2].stride == g.ops[1].shape[-1] > 1]
    assert len(patches) >= 8  # convolution stride = its window
    for kind, models in EXTRA_WAVES[1].items():
        assert all(split_of(kind, m) == "train" for m in models)
    assert BuildOptions(extra=2).seed_offset not in (0, BuildOptions(extra=1).seed_offset)
    with pytest.raises(InputError, match="no layout-nlp architectures"):
        plan_graphs("layout-nlp", root, BuildOptions(graphs=4, extra=2))
    with pytest.raises(InputError, match=r"the waves are 1\.\.5"):
        BuildOptions(extra=6)
    result = runner.invoke(
        app, ["generate", "configs", "--collection", "tile", "--extra", "--extra-wave", "2",
              "--out", str(root)],
    )  # fmt: skip
    assert result.exit_code == 2 and "--extra is wave 1" in result.output


def _xla_programs_of_waves(root, waves):
    """Every planned ``layout-xla`` program of the given waves (0: the original plan)."""
    return [
        graph
        for wave in waves
        for _, graph in plan_graphs("layout-xla", root, BuildOptions(graphs=10**6, extra=wave))
    ]


def _conv_shape(graph):
    """Channels, window and stride of an ``xla`` program's convolution."""
    return graph.ops[1].shape[:3], graph.ops[2].stride


def test_wave_3_adds_xla_programs_of_conv_shapes_no_earlier_training_architecture_had(root):
    """``--extra-wave 3`` (issue 20): six training backbones (``xla`` and tile), none of
    a held-out family, whose 69 programs are all new and mostly of new conv shapes."""
    plan = plan_graphs("layout-xla", root, BuildOptions(graphs=10**6, extra=3))
    assert len(plan) == 69 and {m for m, _ in plan} == set(EXTRA_WAVES[2]["layout-xla"])
    assert all(split_of("layout-xla", m) == "train" for m, _ in plan)
    earlier = _xla_programs_of_waves(root, (0, 1, 2))
    assert not {g.name for g in earlier} & {g.name for _, g in plan}
    assert len({_conv_shape(g) for _, g in plan} - {_conv_shape(g) for g in earlier}) > 40
    assert len({BuildOptions(extra=w).seed_offset for w in (1, 2, 3)}) == 3
    with pytest.raises(InputError, match="no layout-nlp architectures"):
        plan_graphs("layout-nlp", root, BuildOptions(graphs=4, extra=3))


def test_wave_4_adds_other_sizes_of_wave_3_families_with_new_conv_shapes(root):
    """``--extra-wave 4`` (issue 20): eight published sizes of wave 3's families, 131
    new programs; the 72 measured (``--graphs 72``) are nine per backbone and most of
    their conv shapes are new."""
    full = plan_graphs("layout-xla", root, BuildOptions(graphs=10**6, extra=4))
    plan = plan_graphs("layout-xla", root, BuildOptions(graphs=72, extra=4))
    assert len(full) == 131 and plan == full[:72]
    assert Counter(m for m, _ in plan) == dict.fromkeys(EXTRA_WAVES[3]["layout-xla"], 9)
    assert all(split_of("layout-xla", m) == "train" for m, _ in full)
    earlier = _xla_programs_of_waves(root, (0, 1, 2, 3))
    assert not {g.name for g in earlier} & {g.name for _, g in full}
    assert len({_conv_shape(g) for _, g in plan} - {_conv_shape(g) for g in earlier}) > 40
    assert len({BuildOptions(extra=w).seed_offset for w in (1, 2, 3, 4)}) == 4


def test_waves_3_and_4_add_tile_kernels_no_earlier_training_architecture_had(root):
    """Tile gets waves 3 and 4 too (issue 20): every kernel of their 14 backbones is in
    ``train``, 95 and 152 in all, over 70 % of them shapes (op, channels, window, stride,
    size) no earlier plan had. The measured plans: ``--graphs 95`` of wave 3 caps each
    backbone at 17 kernels (77), ``--graphs 80`` of wave 4 takes ten of each backbone."""
    earlier = {
        kernel
        for options in (BuildOptions(graphs=10**6, extra=w) for w in (0, 1, 2))
        for _, kernel in plan_graphs("tile", root, options)
    }
    for wave, total in ((3, 95), (4, 152)):
        plan = plan_graphs("tile", root, BuildOptions(graphs=10**6, extra=wave))
        assert len(plan) == total and {m for m, _ in plan} == set(EXTRA_WAVES[wave - 1]["tile"])
        assert all(split_of("tile", m) == "train" for m, _ in plan)
        assert len({k for _, k in plan} - earlier) > 0.7 * total
        earlier |= {k for _, k in plan}
    measured = plan_graphs("tile", root, BuildOptions(graphs=95, extra=3))
    assert len(measured) == 77 and max(Counter(m for m, _ in measured).values()) == 17
    plan = plan_graphs("tile", root, BuildOptions(graphs=80, extra=4))
    assert Counter(m for m, _ in plan) == dict.fromkeys(EXTRA_WAVES[3]["tile"], 10)


def test_wave_5_adds_hgnet_v2_sizes_with_new_conv_shapes(root):
    """``--extra-wave 5`` (issue 20): PP-HGNetV2 B0-B6, ``xla`` only, 147 new programs;
    the 84 measured (``--graphs 84``) are twelve per size and most of their conv shapes
    are new to waves 0-4."""
    full = plan_graphs("layout-xla", root, BuildOptions(graphs=10**6, extra=5))
    plan = plan_graphs("layout-xla", root, BuildOptions(graphs=84, extra=5))
    assert len(full) == 147 and plan == full[:84]
    assert Counter(m for m, _ in plan) == dict.fromkeys(EXTRA_WAVES[4]["layout-xla"], 12)
    assert all(split_of("layout-xla", m) == "train" for m, _ in full)
    earlier = _xla_programs_of_waves(root, (0, 1, 2, 3, 4))
    assert not {g.name for g in earlier} & {g.name for _, g in full}
    assert len({_conv_shape(g) for _, g in plan} - {_conv_shape(g) for g in earlier}) > 40
    assert len({BuildOptions(extra=w).seed_offset for w in (1, 2, 3, 4, 5)}) == 5


def test_drawn_lengths_are_a_plan_of_their_own_without_test_architectures(root):
    """``--lengths`` (issue 20) draws sequence lengths (``layout-xla``: input sides) for
    the train and valid architectures only, the same ones on every call, most of them
    not powers of two."""
    options = BuildOptions(graphs=24, lengths=True)
    plan = plan_graphs("layout-nlp", root, options)
    assert plan == plan_graphs("layout-nlp", root, options)
    assert len(plan) == 24 and len({g.name for _, g in plan}) == 24
    models = {model for model, _ in plan}
    assert not models & set(SPLITS["layout-nlp"]["test"])
    assert "t5-small" in models and "mobilevit-small" in models  # valid and extra
    tokens = [g.ops[0].shape[0] for _, g in plan]
    assert all(LENGTH_RANGE[0] // 2 <= t <= LENGTH_RANGE[1] for t in tokens)
    assert sum(t & (t - 1) != 0 for t in tokens) > len(tokens) // 2
    base = {g.name for _, g in plan_graphs("layout-nlp", root, BuildOptions(graphs=24))}
    assert len(base & {g.name for _, g in plan}) < 4
    dense = plan_graphs("tile", root, options)  # tile: the same for dense kernels
    assert {model for model, _ in dense} <= models | {"vit-base"}
    assert all(k.op == "dense" for _, k in dense) and len(dense) == 24
    assert sum(k.m & (k.m - 1) != 0 for _, k in dense) >= len(dense) // 3
    convs = plan_graphs("layout-xla", root, options)  # layout-xla: drawn input sides
    assert convs == plan_graphs("layout-xla", root, options) and len(convs) == 24
    assert not {model for model, _ in convs} & set(SPLITS["layout-xla"]["test"])
    sides = [g.ops[0].shape[2] for _, g in convs]
    assert all(s <= LENGTH_RANGE[1] for s in sides)
    assert sum(s & (s - 1) != 0 for s in sides) > len(sides) // 2
    base = {g.name for _, g in plan_graphs("layout-xla", root, BuildOptions(graphs=24))}
    assert len(base & {g.name for _, g in convs}) < 8
    with pytest.raises(InputError, match="needs --graphs"):
        plan_graphs("layout-nlp", root, BuildOptions(lengths=True))
    with pytest.raises(InputError, match="separate plans"):
        BuildOptions(graphs=4, extra=1, lengths=True)
    (path,) = build_collection(root, "layout-nlp", "random", replace(TINY, lengths=True))
    assert path.parent.name in ("train", "valid")


def test_the_check_plan_measures_only_check_architectures_into_test(tmp_path):
    """``--check`` (issue 20): the check architectures (``nlp``: at drawn lengths with
    ``--lengths``; ``xla``: PP-HGNetV2 at its zoo shapes), round-robin, into the test
    split, with seeds of their own; nothing else changes split."""
    shutil.copy(ROOT / "datasets" / "configs-check" / "zoo_shapes.json", tmp_path)
    options = BuildOptions(graphs=12, check=True, lengths=True)
    plan = plan_graphs("layout-nlp", tmp_path, options)
    assert [m for m, _ in plan] == 2 * list(CHECK_MODELS["layout-nlp"])
    assert not set(CHECK_MODELS["layout-nlp"]) & set(MODELS["layout-nlp"])
    assert split_of("layout-nlp", "qwen2-0.5b", options) == "test"
    assert split_of("layout-nlp", "qwen2-0.5b") == split_of("layout-nlp", "bert-base") == "train"
    convs = plan_graphs("layout-xla", tmp_path, BuildOptions(graphs=7, check=True))
    assert sorted(m for m, _ in convs) == sorted(CHECK_MODELS["layout-xla"])
    offsets = {0, LENGTHS_SEED, *EXTRA_SEEDS}
    assert options.seed_offset not in offsets
    with pytest.raises(InputError, match="separate plans"):
        BuildOptions(graphs=4, extra=5, check=True)
    with pytest.raises(InputError, match="--check has no tile"):
        plan_graphs("tile", tmp_path, BuildOptions(graphs=4, check=True))
    tiny = replace(TINY, check=True, lengths=True)
    (path,) = build_collection(tmp_path, "layout-nlp", "random", tiny)
    assert path.parent.name == "test" and path.name.startswith(CHECK_MODELS["layout-nlp"][0])
    build_collection(tmp_path, "layout-nlp", "random", replace(tiny, check=False, graphs=2))
    with pytest.raises(InputError, match="a root of its own"):  # a training root: refused
        build_collection(tmp_path, "layout-nlp", "random", replace(tiny, graphs=2))


def test_drawn_convolutions_are_a_train_plan_of_drawn_shapes(root):
    """``--drawn-convs`` (issue 20): ``layout-xla`` programs of convolutions whose window,
    stride, padding, channels and side are drawn, the same on every call, each plan a
    prefix of a longer one, none of them a zoo program, all in ``train``."""
    options = BuildOptions(graphs=60, drawn_convs=True)
    plan = plan_graphs("layout-xla", root, options)
    assert plan == plan_graphs("layout-xla", root, options)
    assert plan[:20] == plan_graphs("layout-xla", root, replace(options, graphs=20))
    assert len({g.name for _, g in plan}) == 60
    assert {split_of("layout-xla", model, options) for model, _ in plan} == {"train"}
    shapes = [(g.ops[1].shape[2], g.ops[2].stride, g.ops[2].pad) for _, g in plan]
    assert {k for k, _, _ in shapes} == set(range(1, DRAWN_CONV_RANGES["kernel"][1] + 1))
    assert all(1 <= s <= min(k, DRAWN_CONV_RANGES["stride"][1]) for k, s, _ in shapes)
    assert all(0 <= p <= k // 2 for k, _, p in shapes) and any(p for _, _, p in shapes)
    for _, g in plan:  # cropped to the budget as the zoo's programs are
        (_, cin, _, _), (cout, _, k, _), (_, _, out, _) = (op.shape for op in g.ops[:3])
        assert out * out * cout * (cin * k * k + g.ops[4].shape[0]) <= options.max_macs
    assert len({g.ops[0].shape[1] for _, g in plan}) > 30
    zoo = {g.name.split(".", 1)[1] for g in _xla_programs_of_waves(root, (0, 1, 2, 3, 4))}
    assert not zoo & {g.name.split(".", 1)[1] for _, g in plan}
    assert options.seed_offset not in {0, LENGTHS_SEED, *EXTRA_SEEDS, CHECK_SEED}
    with pytest.raises(InputError, match="not tile"):
        plan_graphs("tile", root, options)
    with pytest.raises(InputError, match="needs --graphs"):
        plan_graphs("layout-xla", root, BuildOptions(drawn_convs=True))
    with pytest.raises(InputError, match="separate plans"):
        BuildOptions(graphs=4, lengths=True, drawn_convs=True)
    tiny = replace(TINY, drawn_convs=True)
    (path,) = build_collection(root, "layout-xla", "random", tiny)
    assert path.parent.name == "train" and path.name.startswith("drawn-conv.conv-")


def test_the_model_reads_the_lanes_the_emitter_vectorises_with():
    """``physical_layout``'s lanes column (``dagopt.nn.tgraph.physical``, which cannot
    import this module) assumes the emitter's widest vector."""
    from dagopt.nn.tgraph import physical

    assert physical.VECTOR_LANES == VECTOR_LANES


def test_missing_tvm_is_a_one_line_error(monkeypatch, root):
    monkeypatch.setitem(sys.modules, "tvm", None)  # import tvm raises ImportError
    with pytest.raises(InputError, match=r"pip install 'dagopt\[tvm\]'"):
        require_tvm()
    result = runner.invoke(app, ["generate", "configs", "--collection", "tile", "-o", str(root)])
    assert result.exit_code == 2
    assert "Apache TVM is not installed" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_config_feat_follows_the_official_columns():
    from dagopt.rank.configs.tile import config_features, kernel_nodes

    row = config_features(DENSE, Tiling((4, 8), 16, 1, True, False))
    kernel_bounds = [8, 16, 0, 0, 0, 0, 24, 128]  # weight tile (n, k), sum, product
    output_bounds = [4, 8, 0, 0, 0, 0, 12, 32]
    knobs = [1, 1, 0, 0, 0, 0, 2, 0]  # order, vectorised, unrolled, sum, product
    assert row.tolist() == kernel_bounds + output_bounds + knobs
    conv = config_features(CONV, Tiling((1, 4, 2, 5), 2, 2, False, True))
    assert conv[:8].tolist() == [4, 2, 3, 3, 0, 0, 12, 72]
    from dagopt.rank.configs.features import graph_arrays

    feat, opcode, edges = graph_arrays(kernel_nodes(CONV))
    assert opcode[2] == 26 and feat[2, 37:39].tolist() == [3, 3] and feat[2, 45] == 2
    assert feat[2, 21:25].tolist() == [1, 8, 5, 5] and feat[2, 134:138].tolist() == [3, 2, 1, 0]
    assert feat[-1, 0] == 1 and feat[:-1, 0].sum() == 0
    assert [2, 0] in edges.tolist() and [2, 1] in edges.tolist()  # consumer, producer
