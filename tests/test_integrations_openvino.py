"""Measured placement latency on OpenVINO HETERO (dagopt.integrations.openvino), with the
CPU plugin registered twice so that a CPU-only machine has two devices."""

import numpy as np
import pytest

from dagopt import InputError
from dagopt.data import example_bytes

ov = pytest.importorskip("openvino")
from dagopt.integrations.openvino import OpenVinoLatency, register_cpu_twice  # noqa: E402
from dagopt.io.openvino import convert_openvino  # noqa: E402
from dagopt.place import place  # noqa: E402


@pytest.fixture(scope="module")
def latency(tmp_path_factory):
    onnx_file = tmp_path_factory.mktemp("cnn") / "small-cnn.onnx"
    onnx_file.write_bytes(example_bytes("small-cnn.onnx"))
    core = ov.Core()
    second = register_cpu_twice(core)
    return OpenVinoLatency(convert_openvino(str(onnx_file)), ["CPU", second], core=core)


def test_a_split_model_computes_what_the_whole_one_does(latency):
    n = latency.graph.num_nodes
    whole = latency.outputs(np.zeros(n, dtype=np.int64))
    for device_of in (np.arange(n) % 2, np.ones(n, dtype=np.int64), np.arange(n) // (n // 2 + 1)):
        split = latency.outputs(device_of)
        assert all(np.allclose(a, b, atol=1e-4) for a, b in zip(whole, split, strict=True))


def test_every_device_computes_at_the_models_own_precision(latency):
    """On a CPU with AVX512-BF16 or AMX the CPU plugin would run bf16 by default."""
    reference = latency.core.compile_model(
        latency.model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"}
    )
    expected = [np.asarray(v) for v in reference(latency.inputs).values()]
    n = latency.graph.num_nodes
    for outputs in (
        latency.outputs(np.zeros(n, dtype=np.int64)),
        latency.outputs(np.arange(n) % 2),
    ):
        assert all(np.allclose(a, b, atol=1e-5) for a, b in zip(expected, outputs, strict=True))
    with pytest.raises(InputError, match="precision must be one of"):
        OpenVinoLatency(latency.model, ["CPU"], core=latency.core, precision="f64")


def test_a_placement_is_timed_by_the_papers_protocol(latency):
    n = latency.graph.num_nodes
    evaluation = latency.evaluate(np.arange(n) % 2, None, "runtime")
    assert evaluation.feasible and evaluation.samples.shape == (10,)
    assert evaluation.makespan == pytest.approx(evaluation.samples[-5:].mean())
    assert evaluation.peak_memory is None and latency.lower_bound("runtime") is None
    with pytest.raises(InputError, match=r"a device in 0\.\.1"):
        latency.evaluate(np.full(n, 2), None, "runtime")
    with pytest.raises(InputError, match="runtime objective only"):
        latency.evaluate(np.zeros(n, dtype=np.int64), None, "peak-memory")


def test_hsdag_places_through_measured_latency(latency):
    result = place(
        latency.graph, "hsdag", cost_model=latency, seed=0, episodes=1, steps=3, hidden=8
    )
    assert result.feasible and result.evaluations == 4 and result.peak_memory is None
    assert result.makespan > 0


def test_an_unknown_device_is_an_input_error(latency):
    with pytest.raises(InputError, match=r"no OpenVINO device 'GPU\.7'"):
        OpenVinoLatency(latency.model, ["CPU", "GPU.7"], core=latency.core)


def test_the_frameworks_own_choice_is_timed(latency):
    for device in ("AUTO", "HETERO"):
        samples = latency.measure_auto(device)
        assert samples.shape == (10,) and (samples > 0).all()
    with pytest.raises(InputError, match="AUTO or HETERO"):
        latency.measure_auto("CPU")


def test_an_ir_file_in_the_openvino_environment_on_two_cpu_devices(tmp_path):
    from dagopt.bench.latency_envs import latency_env

    onnx_file = tmp_path / "small-cnn.onnx"
    onnx_file.write_bytes(example_bytes("small-cnn.onnx"))
    ov.save_model(convert_openvino(str(onnx_file)), str(tmp_path / "cnn.xml"))
    target = latency_env(str(tmp_path / "cnn.xml"), "openvino", ["cpu", "cpu"])
    assert target.kind == "MEASURED" and target.env.device_names[0] == "CPU"
    n = target.graph.num_nodes
    whole = target.env.outputs(np.zeros(n, dtype=np.int64))
    split = target.env.outputs(np.arange(n) % 2)
    assert all(np.allclose(a, b, atol=1e-4) for a, b in zip(whole, split, strict=True))
    with pytest.raises(InputError, match="no OpenVINO device"):
        latency_env(str(tmp_path / "cnn.xml"), "openvino", ["cpu", "npu"])
