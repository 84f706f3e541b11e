"""Tests of the layered-graph generator (paper 000, appendix A).

Expected values are derived here independently of the generator, with exact
fractions for eq. (11)-(12) and a renewal recursion for the number of layers.
"""

import math
from fractions import Fraction

import numpy as np
import pytest

from dagopt.errors import GraphError, InputError, SolverError
from dagopt.generate import LayeredParams, generate_layered

SIGMA_N = Fraction(3, 4)
RHO_E = 0.2
RHO_S = 0.14
GMM = ((0.3, 0.5, 0.5), (0.3, 1.0, 1.0), (0.3, 3.0, 1.0), (0.1, 5.0, 1.0))  # (w, mean, std)
STAT_NODES = 500
STAT_SEEDS = range(100)


def layers_of(graph):
    return graph.node_data["layer"].astype(np.int64)


def layer_sizes(graph):
    return np.bincount(layers_of(graph))


def target_range(num_nodes, num_layers):
    """Eq. (12) in exact arithmetic, with the lower bound raised to 1."""
    per_layer = Fraction(num_nodes, num_layers)
    lo = max(1, math.ceil(per_layer * (1 - SIGMA_N)))
    return lo, max(lo, math.floor(per_layer * (1 + SIGMA_N)))


def target_layers(num_nodes, width):
    """Eq. (11)."""
    return math.ceil(math.sqrt(num_nodes * (1 / width - 1)))


def hits_below(num_nodes, lo, hi):
    """``u[s]`` = P(some partial sum of i.i.d. U{lo..hi} layer targets equals ``s``).

    The final layer count is ``#{k >= 0 : S_k < |V|}``, so its mean is ``u.sum()``.
    """
    u = np.zeros(num_nodes)
    u[0] = 1.0
    for s in range(1, num_nodes):
        u[s] = u[max(0, s - hi) : max(0, s - lo + 1)].sum() / (hi - lo + 1)
    return u


def budget(n1, n2):
    """Eq. (13), rounded to the nearest integer."""
    return round(n1 * n2 * RHO_E + (1 - RHO_E) * max(n1, n2))


@pytest.fixture(scope="module")
def stat_graphs():
    return [generate_layered(STAT_NODES, seed=seed) for seed in STAT_SEEDS]


# ------------------------------------------------------------------ basic contract
@pytest.mark.parametrize("num_nodes", [1, 2, 3, 4, 5, 10, 37, 500])
def test_exact_node_count_and_consecutive_layers(num_nodes):
    for seed in range(5):
        graph = generate_layered(num_nodes, seed=seed)
        assert graph.num_nodes == num_nodes
        layers = layers_of(graph)
        assert layers[0] == 0
        assert np.all(np.diff(layers) >= 0), "nodes must be numbered layer by layer"
        assert np.all(layer_sizes(graph) >= 1), "no empty layer"
        assert graph.names == tuple(range(num_nodes))


def test_single_node_and_two_nodes():
    single = generate_layered(1, seed=3)
    assert single.num_edges == 0 and single.node_data["layer"].tolist() == [0.0]
    for seed in range(10):  # eq. (12) gives one-node layers for |V| = 2: a 2-chain
        pair = generate_layered(2, seed=seed)
        assert pair.node_data["layer"].tolist() == [0.0, 1.0]
        assert [a.tolist() for a in pair.edges] == [[0], [1]]


@pytest.mark.parametrize("bad", [0, -4])
def test_rejects_fewer_than_one_node(bad):
    with pytest.raises(GraphError, match="at least 1 node"):
        generate_layered(bad, seed=0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"width_range": (0.0, 0.5)},
        {"width_range": (0.6, 0.5)},
        {"sigma_n": -0.1},
        {"sigma_n": float("inf")},
        {"rho_e": 1.5},
        {"rho_s": 1.0},
        {"gmm_weights": (1.0, 0.0)},
        {"gmm_stds": (0.5, 0.0, 1.0, 1.0)},
        {"gmm_means": (-1.0, -1.0, -1.0, -1.0)},
        {"gmm_means": (0.5, 1.0, 3.0, float("nan"))},
        {"gmm_weights": (0.3, 0.3)},
    ],
)
def test_rejects_bad_parameters(kwargs):
    with pytest.raises(InputError):
        LayeredParams(**kwargs)


def test_deterministic_by_seed_and_seeds_differ():
    a, b = generate_layered(300, seed=11), generate_layered(300, seed=11)
    for x, y in zip(a.edges, b.edges, strict=True):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.mem, b.mem)
    np.testing.assert_array_equal(a.param_mem, b.param_mem)
    np.testing.assert_array_equal(a.node_data["layer"], b.node_data["layer"])
    c = generate_layered(300, seed=12)
    edges = {(int(u), int(v)) for u, v in zip(*a.edges, strict=True)}
    assert edges != {(int(u), int(v)) for u, v in zip(*c.edges, strict=True)}
    assert not np.array_equal(a.mem, c.mem)
    from_generator = generate_layered(300, seed=np.random.default_rng(11))
    np.testing.assert_array_equal(from_generator.succ_idx, a.succ_idx)
    assert a.name == "layered-300-s11" and from_generator.name == "layered-300"
    assert generate_layered(5, seed=0, name="mine").name == "mine"


# ------------------------------------------------------------------ structure (alg. 2-3)
@pytest.mark.parametrize(("num_nodes", "seed"), [(10, 0), (40, 1), (120, 2), (500, 3), (500, 4)])
def test_edges_follow_layers(num_nodes, seed):
    graph = generate_layered(num_nodes, seed=seed)
    layers = layers_of(graph)
    last = layers[-1]
    src, dst = graph.edges
    assert np.all(layers[dst] > layers[src]), "edges go from a lower to a higher layer"
    assert np.all(graph.in_degree[layers == 0] == 0)
    assert np.all(graph.out_degree[layers == last] == 0)
    assert np.all(graph.in_degree[layers > 0] > 0) and np.all(graph.out_degree[layers < last] > 0)


@pytest.mark.parametrize(("num_nodes", "seed"), [(10, 5), (60, 6), (200, 7), (500, 8), (2000, 9)])
def test_adjacent_edges_match_algorithm_2(num_nodes, seed):
    graph = generate_layered(num_nodes, seed=seed)
    sizes = layer_sizes(graph)
    offsets = np.cumsum(sizes) - sizes
    layers = layers_of(graph)
    src, dst = graph.edges
    adjacent = layers[dst] - layers[src] == 1
    for first in range(sizes.size - 1):
        n1, n2 = int(sizes[first]), int(sizes[first + 1])
        in_pair = adjacent & (layers[src] == first)
        assert int(in_pair.sum()) == budget(n1, n2), f"eq. (13) budget, layers {first}-{first + 1}"
        local_1, local_2 = src[in_pair] - offsets[first], dst[in_pair] - offsets[first + 1]
        # l_s is the larger layer (l_1 on ties); node n of l_s reaches c_n consecutive targets
        big, small, ns, nt = (local_1, local_2, n1, n2) if n1 >= n2 else (local_2, local_1, n2, n1)
        counts = np.bincount(big, minlength=ns)
        q, r = divmod(budget(n1, n2), ns)
        assert set(counts.tolist()) <= {q, q + 1} and int((counts == q + 1).sum()) == r
        assert np.all(np.bincount(small, minlength=nt) > 0), "every node of l_t is reached"
        for n in range(ns):
            targets = np.sort(small[big == n])
            assert targets[-1] - targets[0] == targets.size - 1, "targets form a range"
            centre = 0 if ns == 1 else math.floor(Fraction(n * (nt - 1), ns - 1) + Fraction(1, 2))
            start = min(max(centre - (targets.size - 1) // 2, 0), nt - targets.size)
            assert targets[0] == start, "range centred on n_c, shifted inside l_t"


@pytest.mark.parametrize("seed", range(5))
def test_skip_edges_land_below_their_source(seed):
    graph = generate_layered(500, seed=seed)
    sizes = layer_sizes(graph)
    offsets = np.cumsum(sizes) - sizes
    layers = layers_of(graph)
    src, dst = graph.edges
    skip = layers[dst] - layers[src] >= 2
    assert skip.any()
    ls, lt = layers[src[skip]], layers[dst[skip]]
    assert ls.max() <= sizes.size - 3
    assert lt.min() >= 2
    i, j = src[skip] - offsets[ls], dst[skip] - offsets[lt]
    ns, nt = sizes[ls], sizes[lt]
    # x_s in [i/N_s, (i+1)/N_s) and x_t in [x_s, x_s + 0.2] (then capped at 0.999)
    assert np.all(j >= i * nt // ns)
    assert np.all(5 * j * ns < (5 * (i + 1) + ns) * nt)


def test_skip_layers_are_uniform(stat_graphs):
    source, target = [], []
    for graph in stat_graphs:
        layers = layers_of(graph)
        ls, lt = layers[graph.edges[0]], layers[graph.edges[1]]
        top = layers[-1] - 2  # last admissible source layer, L - 3
        skip = lt - ls >= 2
        source.append(ls[skip] / top)
        free = skip & (ls < top)  # target layer uniform in [ls + 2, L - 1]
        target.append((lt[free] - ls[free] - 2) / (top - ls[free]))
    # Both relative positions have mean 1/2 under algorithm 3. Merged duplicates pile up
    # at ls = L - 3 (the target is forced there) and pull the source mean down by ~0.006.
    assert abs(np.concatenate(source).mean() - 0.5) < 0.02
    assert abs(np.concatenate(target).mean() - 0.5) < 0.02


def test_extra_adjacent_edges_go_to_random_nodes(stat_graphs):
    """The |E| mod N_s nodes of l_s with one more edge are a uniformly random subset."""
    positions = []
    for graph in stat_graphs[:20]:
        sizes = layer_sizes(graph)
        offsets = np.cumsum(sizes) - sizes
        layers = layers_of(graph)
        src, dst = graph.edges
        for first in range(sizes.size - 1):
            n1, n2 = int(sizes[first]), int(sizes[first + 1])
            if n1 < n2 or n1 == 1:
                continue
            in_pair = (layers[src] == first) & (layers[dst] == first + 1)
            counts = np.bincount(src[in_pair] - offsets[first], minlength=n1)
            if counts.max() > counts.min():
                positions.append(np.flatnonzero(counts == counts.max()) / (n1 - 1))
    pooled = np.concatenate(positions)
    assert len(positions) > 100
    # Drawn without replacement, so the i.i.d. standard error used here is conservative.
    assert abs(pooled.mean() - 0.5) < 4 * pooled.std(ddof=1) / math.sqrt(pooled.size)


def test_three_layers_get_one_skip_edge_and_rho_s_zero_disables_them():
    three_layer_graphs = 0
    for seed in range(20):
        graph = generate_layered(3, seed=seed)
        if layers_of(graph)[-1] == 2:  # 2 adjacent edges, N_S = ceil(2 * 0.14 / 0.86) = 1
            three_layer_graphs += 1
            assert [a.tolist() for a in graph.edges] == [[0, 0, 1], [1, 2, 2]]
    assert three_layer_graphs > 0
    graph = generate_layered(500, seed=1, params=LayeredParams(rho_s=0.0))
    layers = layers_of(graph)
    assert np.all(layers[graph.edges[1]] - layers[graph.edges[0]] == 1)


# ------------------------------------------------------------------ statistics (100 graphs)
def test_layer_count_matches_eq_11_12(stat_graphs):
    v = STAT_NODES
    low, high = 0.25, 0.5
    l_min, l_max = target_layers(v, high), target_layers(v, low)
    # Per graph: every target lies in [lo(L), hi(L)], so the final layer count is in
    # [ceil(|V| / hi), ceil(|V| / lo)] for the graph's L in [l_min, l_max].
    k_min = min(-(-v // target_range(v, lay)[1]) for lay in range(l_min, l_max + 1))
    k_max = max(-(-v // target_range(v, lay)[0]) for lay in range(l_min, l_max + 1))
    counts = np.array([layer_sizes(g).size for g in stat_graphs])
    assert k_min <= counts.min() and counts.max() <= k_max

    # Exact mean: P(L <= l) = P(W >= 1 / (1 + l^2 / |V|)) for W ~ U(0.25, 0.5), and
    # E[K | L] from the renewal recursion of the layer targets.
    def cdf(lay):
        return min(1.0, max(0.0, (high - 1 / (1 + lay * lay / v)) / (high - low)))

    expected = sum(
        (cdf(lay) - cdf(lay - 1)) * hits_below(v, *target_range(v, lay)).sum()
        for lay in range(l_min, l_max + 1)
    )
    stderr = counts.std(ddof=1) / math.sqrt(counts.size)
    assert abs(counts.mean() - expected) < 4 * stderr, (counts.mean(), expected)


@pytest.mark.parametrize(
    ("v", "width", "expected"),
    [
        (500, 0.3, (35, 4, 25)),  # |V| / L (1 + sigma) = 25 exactly
        (244, 0.85, (7, 9, 61)),  # = 61 exactly, but 244 / 7 * 1.75 rounds to 60.99999999999999
    ],
)
def test_nodes_per_layer_for_fixed_width(v, width, expected):
    params = LayeredParams(width_range=(width, width))
    lay = target_layers(v, width)
    lo, hi = target_range(v, lay)
    assert (lay, lo, hi) == expected
    sizes = [layer_sizes(generate_layered(v, seed=s, params=params)) for s in STAT_SEEDS]
    full = np.concatenate([s[:-1] for s in sizes])  # all but the truncated last layer
    assert full.min() == lo and full.max() == hi, "targets span exactly eq. (12)'s range"
    assert all(1 <= s[-1] <= hi for s in sizes)
    # Pooled mean of the untruncated layers, E[S_{K-1}] / E[K - 1]: slightly below
    # (lo + hi) / 2 because the layer that crosses |V| is size-biased.
    u = hits_below(v, lo, hi)
    reach = np.arange(v)
    p_cross = np.clip((hi - (v - reach) + 1) / (hi - lo + 1), 0, 1)  # P(target >= |V| - s)
    mean_full = (reach * u * p_cross).sum() / (u.sum() - 1)
    stderr = full.std(ddof=1) / math.sqrt(full.size)
    assert abs(full.mean() - mean_full) < 4 * stderr, (full.mean(), mean_full)
    assert abs(full.mean() - v / lay) < 1.0
    counts = np.array([s.size for s in sizes])
    assert abs(counts.mean() - u.sum()) < 4 * counts.std(ddof=1) / math.sqrt(counts.size)


def test_skip_share_near_rho_s(stat_graphs):
    shares, lost = [], []
    for graph in stat_graphs:
        layers = layers_of(graph)
        span = layers[graph.edges[1]] - layers[graph.edges[0]]
        adjacent, skips = int((span == 1).sum()), int((span >= 2).sum())
        drawn = math.ceil(Fraction(adjacent) * Fraction(7, 43))  # eq. (14): 0.14 / 0.86
        assert skips <= drawn, "merging duplicates can only lower the count"
        shares.append(skips / (adjacent + skips))
        lost.append((drawn - skips) / drawn)
    # Before merging, the share N_S / (|E| + N_S) lies in [rho_s, rho_s + 1 / (|E| + N_S)],
    # and 1 / (|E| + N_S) < 1e-3 at 500 nodes. A skip edge is one of ~10^4 (layer pair,
    # source, target) cells, unevenly likely (at ls = L - 3 the target layer is forced), so
    # ~400 draws per graph collide a few times: ~2.6% are merged away; allow 5%. Losing a
    # fraction f of the skips keeps the share above rho_s (1 - f).
    assert np.mean(lost) < 0.05
    assert RHO_S * (1 - 0.05) <= np.mean(shares) <= RHO_S + 1e-3


def truncated_gmm_mean():
    """Mean of the mixture conditioned on > 0: sum w_i Z_i E_i / sum w_i Z_i."""
    mass = moment = 0.0
    for weight, mean, std in GMM:
        alpha = mean / std
        z = 0.5 * (1 + math.erf(alpha / math.sqrt(2)))  # P(X_i > 0)
        pdf = math.exp(-alpha * alpha / 2) / math.sqrt(2 * math.pi)
        mass += weight * z
        moment += weight * (mean * z + std * pdf)  # w_i E[X_i; X_i > 0]
    return moment / mass


def test_costs_per_layer_follow_positive_gmm(stat_graphs):
    per_layer = {"mem": [], "param_mem": []}
    for graph in stat_graphs:
        layers = layers_of(graph)
        starts = np.flatnonzero(np.diff(layers, prepend=-1))
        for key, values in per_layer.items():
            cost = getattr(graph, key)
            assert np.all(cost == cost[starts][layers]), f"{key} constant within a layer"
            values.append(cost[starts])
        assert not np.array_equal(graph.mem, graph.param_mem)
    expected = truncated_gmm_mean()
    assert 2.05 < expected < 2.12  # the untruncated mixture mean would be 1.85
    for key, values in per_layer.items():
        sample = np.concatenate(values)
        assert np.all(sample > 0), f"{key} must be positive (eq. 16)"
        assert np.unique(sample).size == sample.size
        stderr = sample.std(ddof=1) / math.sqrt(sample.size)
        assert abs(sample.mean() - expected) < 4 * stderr, (key, sample.mean(), expected)


def test_a_graph_beyond_the_memory_is_refused_before_it_is_built(monkeypatch):
    import dagopt.resources

    monkeypatch.setattr(dagopt.resources, "available_bytes", lambda: 50 * 2**20)  # 50 MiB
    generate_layered(10_000, seed=0)  # 0.2 million edges: about 27 MiB, under 80 %
    with pytest.raises(SolverError, match=r"layered graph of 20,000 nodes and about .* edges"):
        generate_layered(20_000, seed=0)
