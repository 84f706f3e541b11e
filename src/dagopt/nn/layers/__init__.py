"""Neural-network layers, one per module with its formula in the docstring (PyG style)."""
