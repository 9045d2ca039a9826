"""The hand-written autograd Functions of ``polytope/_scores.py`` against the
plain torch expressions they replace: the batch conditional entropy
(``_CellEntropy``, one tree and several) and the prior of eq. (15)
(``_PriorPenalty``)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

TINY = 1e-12


def _entropy_reference(P, y, w, member, n_members):
    """The criterion as autograd computed it before ``_CellEntropy``: counts
    per (member, leaf, class), log class proportions, per-row terms."""
    n_classes = int(y.max()) + 1
    real = member >= 0
    member = member.clamp(min=0)
    w = w * real
    m = torch.zeros(n_members, dtype=w.dtype).index_add(0, member, real.to(w.dtype))
    W = torch.zeros(n_members, dtype=w.dtype).index_add(0, member, w)
    scale = (m / W.clamp(min=TINY))[member]
    onehot = F.one_hot(y, n_classes).to(P.dtype)
    counts = torch.einsum("nl,nc,nt->tlc", P * w[:, None], onehot,
                          F.one_hot(member, n_members).to(P.dtype))
    log_pi = torch.log(counts + TINY) - torch.log(counts.sum(-1, keepdim=True) + TINY)
    per = -(P * log_pi[member, :, y]).sum(1)
    return per * w * scale


@pytest.mark.parametrize("dtype,rtol", [("float64", 1e-10), ("float32", 1e-4)])
@pytest.mark.parametrize("n_members", [1, 4])
def test_cell_entropy_equals_autograd_expression(dtype, rtol, n_members):
    """``entropy_loss`` (one ``_CellEntropy`` node) gives the per-row terms of
    the autograd expression and its gradient in ``P``, for one tree and for
    several trees' rows flattened together (padding rows: member -1)."""
    from sklearn_difftrees.polytope._training import entropy_loss

    dt = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(0)
    m, L = 300, 6
    P0 = torch.softmax(torch.randn(m, L, generator=gen, dtype=dt), 1)
    y = torch.randint(0, 3, (m,), generator=gen)
    w = torch.rand(m, generator=gen, dtype=dt) + 0.5
    member = (torch.randint(-1, n_members, (m,), generator=gen) if n_members > 1
              else torch.zeros(m, dtype=torch.long))
    g = torch.randn(m, generator=gen, dtype=dt)

    def run(fn):
        P = P0.clone().requires_grad_(True)
        out = fn(P)
        (out * g).sum().backward()
        return out.detach(), P.grad

    Yw = torch.stack([y.to(dt), w], 1)
    got = run(lambda P: entropy_loss(P, Yw, None if n_members == 1 else member, n_members))
    ref = run(lambda P: _entropy_reference(P, y, w, member, n_members))
    for a, b in zip(got, ref):
        assert a.dtype == dt
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype,rtol", [("float64", 1e-10), ("float32", 1e-4)])
def test_prior_penalty_equals_autograd_expression(dtype, rtol):
    """``prior_penalty`` (one ``_PriorPenalty`` node) gives eq. (15) over
    every split node, divided by the rows, and its gradients in ``beta``,
    ``bias`` and ``rho``."""
    from sklearn_difftrees.polytope._freeze import PRIOR_EPS
    from sklearn_difftrees.polytope._training import PolytopeTreeModule, prior_penalty

    dt = getattr(torch, dtype)
    torch.manual_seed(0)
    module = PolytopeTreeModule([0, 1, 2, 4], 7, 5).to(dt)
    with torch.no_grad():
        module.bias.normal_()
        module.rho.normal_()
    prior = dict(gamma0=9.0, c0=0.3, a_beta=0.5, b_beta=2.0)

    def reference(mod, n_samples):
        K = mod.rho.shape[1]
        r = F.softplus(mod.rho)
        gamma = (-(prior["gamma0"] / K - 1.0) * torch.log(r + PRIOR_EPS) + prior["c0"] * r).sum()
        coef = torch.cat([mod.beta, mod.bias[..., None]], dim=-1)
        shrink = (prior["a_beta"] + 0.5) * torch.log1p(coef**2 / (2.0 * prior["b_beta"])).sum()
        return (gamma + shrink) / n_samples

    results = []
    for fn in (lambda mod: prior_penalty(mod, n_samples=50, **prior),
               lambda mod: reference(mod, 50)):
        module.zero_grad()
        value = fn(module)
        (1.7 * value).backward()
        results.append([value.detach()] + [p.grad.clone() for p in
                                           (module.beta, module.bias, module.rho)])
    for a, b in zip(*results):
        assert a.dtype == dt
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=rtol, atol=rtol)
