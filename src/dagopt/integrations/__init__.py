"""Apply dagopt's results to real frameworks and check them on a real run (``torch``,
``onnxruntime``, OpenVINO, TVM)."""
