"""Packed node sets: node ``v`` is bit ``v & 63`` of 64-bit word ``v >> 6``."""

import numpy as np


def num_words(num_nodes: int) -> int:
    """Number of uint64 words needed for a set over ``num_nodes`` nodes."""
    return max(1, (num_nodes + 63) // 64)


def bits_to_bool(bits: np.ndarray, num_nodes: int) -> np.ndarray:
    """Unpack a ``(rows, words)`` uint64 bitset array into a ``(rows, num_nodes)`` bool matrix."""
    as_bytes = np.ascontiguousarray(bits).astype("<u8", copy=False).view(np.uint8)
    unpacked = np.unpackbits(as_bytes, axis=-1, bitorder="little")
    return unpacked[..., :num_nodes].astype(bool)


def word_bits(nodes: np.ndarray) -> np.ndarray:
    """Each node's bit within its 64-bit word of a bitset (word ``node >> 6``)."""
    return np.left_shift(np.uint64(1), (nodes & 63).astype(np.uint64))


def singleton_bits(num_nodes: int) -> np.ndarray:
    """``(num_nodes, words)`` array whose row ``v`` holds only bit ``v``."""
    bits = np.zeros((num_nodes, num_words(num_nodes)), dtype=np.uint64)
    nodes = np.arange(num_nodes)
    bits[nodes, nodes >> 6] = word_bits(nodes)
    return bits


def test_bits(bits: np.ndarray, rows: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Vectorized membership: is node ``nodes[i]`` in set ``bits[rows[i]]``?"""
    words = bits[rows, nodes >> 6]
    return ((words >> (nodes & 63).astype(np.uint64)) & np.uint64(1)).astype(bool)
