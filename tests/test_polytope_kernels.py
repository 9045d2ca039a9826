"""ConvexPolytopeTree's compiled conditional passes against independent oracles:
numpy path products (eq. 8), torch autograd of the dense module, finite
differences, and the truncation bound of ``eps``."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from sklearn_difftrees._kernels import _polytope as _kernel  # noqa: E402
from sklearn_difftrees.polytope import _training  # noqa: E402
from sklearn_difftrees.polytope._kernels import (  # noqa: E402
    child_table,
    polytope_backward,
    polytope_forward,
)
from sklearn_difftrees.polytope._training import (  # noqa: E402
    PolytopeTreeModule,
    entropy_loss,
    variance_loss,
)

# A complete depth-4 tree with an unbalanced tail below it (36 split nodes).
NODES = list(range(31)) + [31, 32, 45, 46, 93]
TREES = [[0], [0, 2], [0, 1, 2, 5], list(range(15)), NODES]


@pytest.fixture(params=[True, False], ids=["fma", "baseline"])
def fma(request, kernel_fma):
    """The float32 passes on their FMA variant (where the processor has FMA:
    the default) and on the baseline x86-64 one, which processors without
    FMA run; restored after."""
    used = _kernel._use_fma(request.param)
    yield used
    _kernel._use_fma(kernel_fma)


def _random_tree(nodes, p, K, dtype, rng, spread=3.0):
    """A module with random parameters; returns ``(module, X)``."""
    torch.manual_seed(int(rng.randint(1 << 30)))
    module = PolytopeTreeModule(nodes, n_features=p, n_facets=K).to(dtype)
    with torch.no_grad():
        module.bias.normal_(0, 1)
        module.rho.normal_(0, 1)
    X = torch.as_tensor(spread * rng.normal(size=(57, p)), dtype=dtype)
    return module, X


def _path_products(module, X):
    """Eq. (8) in numpy, float64: a leaf's probability is the product over
    its ancestors of exp(-s_v) (left) or 1 - exp(-s_v) (right)."""
    beta = module.beta.detach().double().numpy()
    bias = module.bias.detach().double().numpy()
    r = module.weights().detach().double().numpy()
    z = np.einsum("np,skp->nsk", X.double().numpy(), beta) + bias
    s = (r * np.logaddexp(0, z)).sum(-1)
    pos = {v: i for i, v in enumerate(module.split_nodes)}
    P = np.ones((X.shape[0], len(module.leaves)))
    for col, leaf in enumerate(module.leaves):
        child = leaf
        while child:
            parent = (child - 1) // 2
            sv = s[:, pos[parent]]
            P[:, col] *= np.exp(-sv) if child == 2 * parent + 1 else -np.expm1(-sv)
            child = parent
    return P


def _kernel_pass(module, X, grad, eps=0.0, **kw):
    r = module.weights().detach().numpy()
    child = child_table(module.split_nodes, module.leaves)
    P, rec = polytope_forward(X.numpy(), module.beta.detach().numpy(),
                              module.bias.detach().numpy(), r, child, len(module.leaves),
                              eps=eps, record=True, **kw)
    grads = polytope_backward(X.numpy(), r, child, grad, rec, X.shape[1],
                              n_threads=kw.get("n_threads", 1))
    return P, grads


def _dense_grads(module, X, grad):
    """dL/d(beta, bias, r) of L = sum(P * grad) by torch autograd of the
    dense module (every node evaluated)."""
    beta = module.beta.detach().clone().requires_grad_(True)
    bias = module.bias.detach().clone().requires_grad_(True)
    r = module.weights().detach().clone().requires_grad_(True)
    s = _training._NodeScores.apply(X, beta, bias, r)
    conditional, module.conditional = module.conditional, False
    try:
        module.node_scores = lambda X: s
        P = module(X)
    finally:
        del module.node_scores
        module.conditional = conditional
    (P * torch.as_tensor(grad)).sum().backward()
    return P.detach().numpy(), (beta.grad.numpy(), bias.grad.numpy(), r.grad.numpy())


@pytest.mark.parametrize("nodes,K", [(t, 3) for t in TREES] + [(NODES, K) for K in (1, 5, 8, 10, 13, 20)])
@pytest.mark.parametrize("dtype,rtol", [(torch.float64, 1e-10), (torch.float32, 2e-4)])
def test_exact_passes_match_path_products_and_autograd(nodes, K, dtype, rtol, fma):
    """Any number of facets: the float32 pass sums them in chunks of four,
    eight or twelve at a time (K = 1: one chunk; 5 and 8: eight; 10: twelve;
    13: eight twice; 20: eight, then twelve); both variants."""
    rng = np.random.RandomState(len(nodes) + K)
    module, X = _random_tree(nodes, 7, K, dtype, rng)
    grad = rng.normal(size=(X.shape[0], len(module.leaves))).astype(X.numpy().dtype)
    P, grads = _kernel_pass(module, X, grad)
    assert P.dtype == X.numpy().dtype and all(g.dtype == P.dtype for g in grads)
    np.testing.assert_allclose(P, _path_products(module, X), rtol=rtol, atol=rtol * 1e-2)
    P_dense, ref = _dense_grads(module, X, grad)
    np.testing.assert_allclose(P, P_dense, rtol=rtol, atol=rtol * 1e-2)
    for got, exp in zip(grads, ref):
        scale = np.abs(exp).max()
        np.testing.assert_allclose(got, exp, rtol=rtol, atol=rtol * scale)


def test_gradcheck_of_the_module_on_the_kernels(monkeypatch):
    """Finite differences through the autograd Function (float64, eps = 0)."""
    torch.manual_seed(0)
    module = PolytopeTreeModule(NODES, n_features=4, n_facets=2).double()
    assert module.conditional
    module.reach_eps = 0.0
    module._choose = lambda reached: None  # the kernels on every pass
    X = torch.randn(15, 4, dtype=torch.float64)
    y = torch.tensor([0, 1, 2] * 5, dtype=torch.float64)
    w = torch.rand(15, dtype=torch.float64) + 0.5
    t = torch.randn(15, 1, dtype=torch.float64)

    def objective(beta, bias, rho):
        for name, value in zip(("beta", "bias", "rho"), (beta, bias, rho)):
            module._parameters.pop(name, None)  # plain tensors: gradcheck's inputs
            setattr(module, name, value)
        P = module(X)
        return (entropy_loss(P, torch.stack([y, w], 1)).mean()
                + variance_loss(P, torch.cat([t, w[:, None]], 1)).mean())

    inputs = tuple(p.detach().clone().requires_grad_(True)
                   for p in (module.beta, module.bias, module.rho))
    assert torch.autograd.gradcheck(objective, inputs, eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("eps", [1e-6, 1e-3, 0.05])
def test_truncation_drops_at_most_eps_per_skipped_node(eps):
    """A split node reached with probability <= eps is not expanded: its
    leaves get 0, every other leaf keeps its exact value, and a row loses
    at most eps per skipped node (their subtrees are disjoint)."""
    rng = np.random.RandomState(3)
    module, X = _random_tree(NODES, 5, 3, torch.float64, rng, spread=6.0)
    exact = _path_products(module, X)
    grad = rng.normal(size=exact.shape)
    P, grads = _kernel_pass(module, X, grad, eps=eps)
    _, rec0 = polytope_forward(X.numpy(), module.beta.detach().numpy(),
                               module.bias.detach().numpy(), module.weights().detach().numpy(),
                               child_table(module.split_nodes, module.leaves),
                               len(module.leaves), record=True)
    _, rec = polytope_forward(X.numpy(), module.beta.detach().numpy(),
                              module.bias.detach().numpy(), module.weights().detach().numpy(),
                              child_table(module.split_nodes, module.leaves),
                              len(module.leaves), eps=eps, record=True)
    assert (rec.length < rec0.length).any()  # something was skipped
    kept = np.isclose(P, exact, rtol=1e-12, atol=0)
    assert np.all(P[~kept] == 0)
    lost = (exact - P).sum(1)
    assert np.all(lost >= -1e-12)
    assert np.all(lost <= eps * (rec0.length - rec.length) + 1e-12)
    # the gradients are those of the truncated function: close to the exact ones
    _, exact_grads = _kernel_pass(module, X, grad)
    for got, exp in zip(grads, exact_grads):
        assert np.abs(got - exp).max() <= 50 * eps * np.abs(exp).max() + 1e-12


@pytest.mark.parametrize("eps", [1e-6, 1e-3, 0.05])
def test_truncated_passes_match_masked_dense_autograd(eps):
    """The truncated function's oracle: dense torch autograd with the leaves
    below every split node of reach <= eps masked (the mask is piecewise
    constant, so its gradient is that of the kept leaves)."""
    rng = np.random.RandomState(3)
    module, X = _random_tree(NODES, 5, 3, torch.float64, rng, spread=6.0)
    grad = rng.normal(size=(X.shape[0], len(module.leaves)))
    P, grads = _kernel_pass(module, X, grad, eps=eps)
    beta = module.beta.detach().clone().requires_grad_(True)
    bias = module.bias.detach().clone().requires_grad_(True)
    r = module.weights().detach().clone().requires_grad_(True)
    s = (r * F.softplus(torch.einsum("np,skp->nsk", X, beta) + bias)).sum(-1)
    pos = {v: i for i, v in enumerate(module.split_nodes)}
    reach = {0: torch.ones(X.shape[0], dtype=X.dtype)}
    alive = {0: torch.ones(X.shape[0], dtype=bool)}
    for v in module.split_nodes:
        sv = s[:, pos[v]]
        for c, f in ((2 * v + 1, torch.exp(-sv)), (2 * v + 2, -torch.expm1(-sv))):
            reach[c] = reach[v] * f
            alive[c] = alive[v] & (reach[c] > eps) if c in pos else alive[v]
    Pm = torch.stack([reach[c] * alive[c] for c in module.leaves], 1)
    (Pm * torch.as_tensor(grad)).sum().backward()
    np.testing.assert_allclose(P, Pm.detach().numpy(), rtol=1e-12, atol=1e-15)
    assert ((P == 0) & (_path_products(module, X) > 0)).any()  # something was cut
    for got, t in zip(grads, (beta, bias, r)):
        np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-10,
                                   atol=1e-12 * np.abs(t.grad.numpy()).max())


def test_record_growth_threads_readonly_and_no_mutation():
    rng = np.random.RandomState(4)
    module, X = _random_tree(NODES, 6, 4, torch.float64, rng)
    beta = module.beta.detach().numpy().copy()
    bias = module.bias.detach().numpy().copy()
    r = module.weights().detach().numpy().copy()
    Xn = X.numpy().copy()
    child = child_table(module.split_nodes, module.leaves)
    g = rng.normal(size=(Xn.shape[0], len(module.leaves)))
    arrays = [a.copy() for a in (Xn, beta, bias, r, child, g)]
    for a in (Xn, beta, bias, r, child, g):
        a.setflags(write=False)
    P1, rec1 = polytope_forward(Xn, beta, bias, r, child, len(module.leaves), record=True,
                                capacity=1)
    assert rec1.node.shape[1] == rec1.length.max()  # ran again with enough
    res1 = polytope_backward(Xn, r, child, g, rec1, Xn.shape[1], n_threads=1)
    P2, rec2 = polytope_forward(Xn, beta, bias, r, child, len(module.leaves), record=True,
                                n_threads=2)
    res2 = polytope_backward(Xn, r, child, g, rec2, Xn.shape[1], n_threads=2)
    np.testing.assert_array_equal(P1, P2)  # per-row: no reduction
    for a, c in zip(res1, res2):  # per-thread sums: same up to rounding
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)
    for a, c in zip((Xn, beta, bias, r, child, g), arrays):
        np.testing.assert_array_equal(a, c)
    with pytest.raises(ValueError, match="Inconsistent fitted polytope tree: record"):
        polytope_backward(Xn[:-1], r, child, g[:-1], rec1, Xn.shape[1])
    with pytest.raises(ValueError, match="Inconsistent fitted polytope tree: X"):
        polytope_forward(Xn[:, :-1], beta, bias, r, child, len(module.leaves))


def test_record_buffers_are_reused_only_once_released():
    """A pool hands a record's buffers to a new pass only when nothing else
    refers to that record (a graph kept for a second backward keeps it)."""
    rng = np.random.RandomState(5)
    module, X = _random_tree(NODES, 6, 4, torch.float64, rng)
    args = (X.numpy(), module.beta.detach().numpy(), module.bias.detach().numpy(),
            module.weights().detach().numpy(), child_table(module.split_nodes, module.leaves),
            len(module.leaves))
    pool = []
    _, rec1 = polytope_forward(*args, record=True, pool=pool)
    kept = rec1.sp.copy()
    _, rec2 = polytope_forward(*args, record=True, pool=pool)  # rec1 is still held here
    assert rec2.sp is not rec1.sp
    np.testing.assert_array_equal(rec1.sp, kept)
    buffer = rec1.sp
    del rec1
    _, rec3 = polytope_forward(*args, record=True, pool=pool)  # rec1 released: reused
    assert rec3.sp is buffer
    np.testing.assert_array_equal(rec3.sp, kept)  # the same pass wrote the same values
    assert len(pool) <= 3


def test_float32_softplus_and_sigmoid_over_the_whole_range(fma):
    """One node, one facet, z from -90 to 90: the float32 kernel's left and
    right probabilities and its gradients agree with float64 to float32
    rounding (the softplus goes through logf with a rounding correction),
    with fused multiply-adds or without."""
    z = np.concatenate([np.linspace(-90, 90, 2001), [-1e-3, 0.0, 1e-3]])
    X = z[:, None]
    beta, bias, r = np.ones((1, 1, 1)), np.zeros((1, 1)), np.full((1, 1), 0.7)
    child = child_table([0], [1, 2])
    g = np.column_stack([np.ones_like(z), -np.ones_like(z)]) / z.size
    out = {}
    for dtype in (np.float64, np.float32):
        P, rec = polytope_forward(X.astype(dtype), beta, bias, r, child, 2, record=True)
        out[dtype] = (P, polytope_backward(X.astype(dtype), r, child, g.astype(dtype), rec, 1))
    s = 0.7 * np.logaddexp(0, z)
    np.testing.assert_allclose(out[np.float64][0][:, 0], np.exp(-s), rtol=1e-13)
    np.testing.assert_allclose(out[np.float64][0][:, 1], -np.expm1(-s), rtol=1e-13)
    np.testing.assert_allclose(out[np.float32][0], out[np.float64][0], rtol=3e-6, atol=1e-7)
    for a, b in zip(out[np.float32][1], out[np.float64][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7 * np.abs(b).max())
    # the recorded softplus and sigmoid themselves: within 2 ulp over the
    # range where exp(-|z|) is a normal float32
    z = np.linspace(-87, 87, 200001).astype(np.float32)
    _, rec = polytope_forward(z[:, None], beta, bias, np.ones((1, 1)), child, 2, record=True)
    zd = z.astype(np.float64)
    for got, exact in ((rec.sp[:, 0, 0], np.logaddexp(0, zd)), (rec.sig[:, 0, 0], 1 / (1 + np.exp(-zd)))):
        np.testing.assert_allclose(got.astype(np.float64), exact, rtol=2.5e-7, atol=0)


def test_module_runs_the_kernels_where_rows_reach_few_nodes(monkeypatch):
    """Small trees stay dense; a large tree runs the kernels while its
    training rows reach fewer than 1 / CONDITIONAL_COST_RATIO of its split
    nodes, and every training step (either pass) measures that again."""
    calls = []
    real = _training.polytope_forward

    def spy(*args, **kwargs):
        calls.append(kwargs.get("record", False))
        return real(*args, **kwargs)

    monkeypatch.setattr(_training, "polytope_forward", spy)
    torch.manual_seed(0)
    X = torch.randn(64, 3)
    small = PolytopeTreeModule(list(range(15)), 3, 2)
    small(X).sum().backward()
    assert not small.conditional and calls == []

    large = PolytopeTreeModule(list(range(63)), 3, 2)  # depth 6: 6 of 63 nodes on a hard path
    assert large.conditional

    def scale(c):
        with torch.no_grad():
            large.beta.mul_(c)
            large.bias.mul_(c)

    def step():
        large.zero_grad()
        large(X).sum().backward()

    scale(1e3)  # hard splits: a row reaches a few nodes
    step()
    step()
    with torch.no_grad():
        P = large(X)  # evaluation: no record
    assert calls == [True, True, False]
    np.testing.assert_allclose(P.sum(1).numpy(), 1.0, rtol=1e-5)
    assert large.beta.grad is not None and large.rho.grad is not None
    scale(1e-4)  # soft splits: every row reaches every node
    step()  # the kernels measure it...
    step()  # ...and the dense passes run
    assert calls == [True, True, False, True]
    scale(1e6)  # hard again: the dense pass measures it...
    step()
    assert calls == [True, True, False, True]
    step()  # ...and the kernels come back
    assert calls == [True, True, False, True, True]


def test_child_table_encodes_positions_and_leaf_columns():
    nodes, leaves = [0, 2, 6], [1, 5, 13, 14]
    np.testing.assert_array_equal(child_table(nodes, leaves), [[-1, 1], [-2, 2], [-3, -4]])


def test_wrappers_refuse_what_the_kernels_would_trust():
    rng = np.random.RandomState(0)
    module, X = _random_tree([0, 1, 2], 3, 2, torch.float64, rng)
    args = [X.numpy(), module.beta.detach().numpy(), module.bias.detach().numpy(),
            module.weights().detach().numpy()]
    good = child_table(module.split_nodes, module.leaves)  # 3 nodes, 4 leaves
    P, rec = polytope_forward(*args, good, 4, record=True)
    bad_tables = {
        "outside": [[1, 3], [-1, -2], [-3, -4]],  # split position 3 >= S
        "not after its parent": [[1, 2], [0, -2], [-3, -4]],  # a cycle through the root
        "two parents": [[1, 2], [-1, -2], [-1, -3]],  # leaf column 0 twice
        "leaf outside": [[1, 2], [-1, -2], [-3, -5]],  # leaf column 4 of 4
    }
    for name, table in bad_tables.items():
        with pytest.raises(ValueError, match="invalid children table"):
            polytope_forward(*args, np.array(table, dtype=np.int32), 4)
    with pytest.raises(ValueError, match="invalid children table"):
        polytope_forward(*args, good, 3)  # fewer leaf columns than the table uses
    with pytest.raises(ValueError, match="Inconsistent fitted polytope tree: grad_out"):
        polytope_backward(X.numpy(), args[3], good, np.zeros((X.shape[0], 2)), rec, 3)
    chain = np.array([[-1 - i, i + 1] for i in range(70)] + [[-71, -72]], dtype=np.int32)
    with pytest.raises(ValueError, match="deeper than"):  # a chain deeper than the stacks
        polytope_forward(np.zeros((2, 1)), np.zeros((71, 1, 1)), np.zeros((71, 1)),
                         np.ones((71, 1)), chain, 72)


def test_module_falls_back_to_dense_where_the_kernels_do_not_apply():
    """Frozen ``rho`` still trains ``beta`` through the kernels; inputs that
    require a gradient, or of another dtype, take the dense passes (which
    raise on a dtype mismatch, as before)."""
    torch.manual_seed(0)
    module = PolytopeTreeModule(list(range(63)), 3, 2)
    with torch.no_grad():
        module.beta.mul_(1e3)
    X = torch.randn(32, 3)
    module.rho.requires_grad_(False)
    out = module(X)
    assert out.requires_grad and out.grad_fn.name().startswith("_ConditionalPolytope")
    out.sum().backward()
    assert module.beta.grad is not None and module.rho.grad is None
    out = module(X.clone().requires_grad_(True))
    assert not out.grad_fn.name().startswith("_ConditionalPolytope")
    with pytest.raises(RuntimeError):
        module(X.double())


def test_fma_variant_is_used_where_the_processor_has_fma(kernel_fma):
    """On x86-64 Linux the import of the polytope and DGT kernels picks their
    FMA variant when /proc/cpuinfo lists fma (as on CI): the passes the
    estimators run are the ones tested there (both variants are tested
    against the oracles: the ``fma`` fixtures)."""
    import platform
    from pathlib import Path

    from sklearn_difftrees._kernels import _dgt

    cpuinfo = Path("/proc/cpuinfo")
    if platform.machine() != "x86_64" or not cpuinfo.exists():
        pytest.skip("x86-64 Linux only")
    flags = set(cpuinfo.read_text().split())
    for module in (_kernel, _dgt):
        assert module.FMA == ("fma" in flags)
        assert module._use_fma(False) is False
        assert module._use_fma(True) == module.FMA
        module._use_fma(kernel_fma)
