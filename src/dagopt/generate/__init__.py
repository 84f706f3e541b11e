"""Random graph generators."""

from dagopt.generate.layered import LayeredParams, generate_layered

__all__ = ["LayeredParams", "generate_layered"]
