"""Polytope scores as torch autograd Functions with hand-written backward
passes (imported only inside ``fit``, through ``_training``).

``s[v] = sum_k r[v, k] softplus(beta[v, k] . x + bias[v, k])`` (eq. 2) over
every facet of every node dominates a dense training step. Each Function
computes the projections with one matrix product and keeps the
pre-activations, so that its backward pass (``softplus' = sigmoid``) is a
few tensor operations instead of autograd's chain of matmul, broadcast,
softplus and sum nodes. :class:`_CellEntropy` and :class:`_PriorPenalty` do the same for the batch
conditional entropy that every classification step computes on them and
for the prior that every refinement step adds.
"""

import torch
import torch.nn.functional as F

__all__ = ["_CellEntropy", "_NodeScores", "_PriorPenalty", "_StumpScores"]


class _NodeScores(torch.autograd.Function):
    """``s[n, v] = sum_k r[v, k] softplus(beta[v, k] . x_n + bias[v, k])`` with a
    hand-written backward.

    The scores of every facet of every node (``n x S x K`` values: 2.6M for a
    complete depth-8 tree and a batch of 1024 rows) dominate a refinement step. Here
    the projections are one ``addmm``, and the backward reuses the saved
    pre-activations (``softplus' = sigmoid``) instead of autograd's chain of
    einsum, broadcast and softplus nodes: fewer passes over that tensor.
    """

    @staticmethod
    def forward(ctx, X, beta, bias, r):
        S, K, p = beta.shape
        z = torch.addmm(bias.reshape(S * K), X, beta.reshape(S * K, p).T)
        sp = F.softplus(z).view(-1, S, K)
        ctx.save_for_backward(X, z, sp, r)
        return (sp * r).sum(-1)

    @staticmethod
    def backward(ctx, g):
        X, z, sp, r = ctx.saved_tensors
        S, K, p = sp.shape[1], sp.shape[2], X.shape[1]
        grad_r = (sp * g[:, :, None]).sum(0)
        gz = torch.sigmoid(z).view(-1, S, K).mul_(g[:, :, None]).mul_(r).view(-1, S * K)
        grad_beta = (gz.T @ X).view(S, K, p)
        return None, grad_beta, gz.sum(0).view(S, K), grad_r


class _StumpScores(torch.autograd.Function):
    """Scores of ``T`` stumps on their own batches:
    ``s[t, b] = sum_k softplus(rho[t, k]) softplus(beta[t, k] . X[t, b] + bias[t, k])``
    (``X``: ``(T, B, p)``, no gradient; ``beta``: ``(T, K, p)``; ``bias``,
    ``rho``: ``(T, K)``), the batched growth's forward pass with a
    hand-written backward."""

    @staticmethod
    def forward(ctx, X, beta, bias, rho):
        z = torch.bmm(X, beta.transpose(1, 2)).add_(bias[:, None, :])  # (T, B, K)
        sp = F.softplus(z)
        r = F.softplus(rho)
        ctx.save_for_backward(X, z, sp, r, rho)
        return (r[:, None, :] * sp).sum(-1)

    @staticmethod
    def backward(ctx, g):
        X, z, sp, r, rho = ctx.saved_tensors
        grad_r = torch.bmm(g[:, None, :], sp)[:, 0]  # (T, K)
        gz = torch.sigmoid(z).mul_(g[:, :, None]).mul_(r[:, None, :])  # (T, B, K)
        grad_beta = torch.bmm(gz.transpose(1, 2), X)
        return None, grad_beta, gz.sum(1), grad_r * torch.sigmoid(rho)


#: Added to the leaf-class counts and leaf totals before their logarithms,
#: and to the denominators of ``_training``'s leaf means and weight scales.
_TINY = 1e-12


class _CellEntropy(torch.autograd.Function):
    """Per-row terms of the batch conditional entropy of ``T`` trees at once,
    with a hand-written backward.

    ``P`` (``(m, L)``): leaf probabilities; ``cell`` (``(m,)`` long): the
    row's tree and class, ``t * C + y``; ``w``, ``scale``: the row's weight
    and its tree's ``m / W``. With ``counts[t, j, l] = sum_n w_n P[n, l]
    1[cell_n = t C + j]`` (one ``index_add`` of the rows, in row order) and
    ``log_pi = log(counts + TINY) - log(sum_j counts + TINY)``, row ``n``'s
    term is ``-(sum_l P[n, l] log_pi[cell_n, l]) w_n scale_n``. Backward,
    with ``u_n = -g_n scale_n w_n`` and ``Lam = sum_n u_n P[n] 1[cell_n]``
    (a second ``index_add``): ``dP[n] = u_n log_pi[cell_n] + w_n
    D[cell_n]``, ``D = Lam / (counts + TINY) - sum_j Lam / (sum_j counts +
    TINY)``. Measured on a refinement step's loss (625 rows, 64 leaves, 3
    classes, one thread): 0.51 ms by autograd (two thin ``mm`` of 84 us
    each, the ``(m, L)`` gather and its scatter backward) against
    the few passes here.
    """

    @staticmethod
    def forward(ctx, P, cell, w, scale, n_trees, n_classes):
        L = P.shape[1]
        counts = torch.zeros(n_trees * n_classes, L, dtype=P.dtype, device=P.device)
        counts.index_add_(0, cell, P * w[:, None])
        tot = counts.view(n_trees, n_classes, L).sum(1, keepdim=True)  # (T, 1, L)
        log_pi = (torch.log(counts.view(n_trees, n_classes, L) + _TINY)
                  - torch.log(tot + _TINY)).view(n_trees * n_classes, L)
        G = log_pi.index_select(0, cell)
        ctx.save_for_backward(P, cell, w, scale, counts, tot, G)
        ctx.shape = (n_trees, n_classes, L)
        return -(P * G).sum(1) * w * scale

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        P, cell, w, scale, counts, tot, G = ctx.saved_tensors
        T, C, L = ctx.shape
        u = -(g * scale * w)
        lam = torch.zeros_like(counts).index_add_(0, cell, P * u[:, None])
        D = (lam / (counts + _TINY)).view(T, C, L) - lam.view(T, C, L).sum(1, keepdim=True) / (
            tot + _TINY)
        grad = torch.addcmul(u[:, None] * G, w[:, None], D.view(T * C, L).index_select(0, cell))
        return grad, None, None, None, None, None


class _PriorPenalty(torch.autograd.Function):
    """The negative log prior of eq. (15) summed over every split node
    (``_training.prior_penalty``), with a hand-written backward.

    ``sum_k [-(gamma0 / K - 1) ln(r_k + eps) + c0 r_k]`` with ``r =
    softplus(rho)``, plus ``(a_beta + 1/2) sum ln(1 + c^2 / (2 b_beta))``
    over every coefficient ``c`` of ``beta`` and ``bias``. Gradients:
    ``(-(gamma0 / K - 1) / (r + eps) + c0) sigmoid(rho)`` and ``(a_beta +
    1/2) 2 c / (2 b_beta + c^2)``. Measured on a depth-6 tree's parameters
    (63 nodes, 10 facets, 50 features, one thread): forward and backward
    0.29 ms through autograd (a concatenation of ``beta`` and ``bias`` and
    a dozen nodes), about a third of that here.
    """

    @staticmethod
    def forward(ctx, beta, bias, rho, gamma0, c0, a_beta, b_beta, eps):
        K = rho.shape[-1]
        r = F.softplus(rho)
        a = gamma0 / K - 1.0
        gamma = (c0 * r - a * torch.log(r + eps)).sum()
        two_b = 2.0 * b_beta
        shrink = (torch.mul(beta, beta).div_(two_b).log1p_().sum()
                  + torch.mul(bias, bias).div_(two_b).log1p_().sum())
        ctx.save_for_backward(beta, bias, rho, r)
        ctx.consts = (a, c0, a_beta + 0.5, two_b, eps)
        return gamma + (a_beta + 0.5) * shrink

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        beta, bias, rho, r = ctx.saved_tensors
        a, c0, half, two_b, eps = ctx.consts
        scale = 2.0 * half * g
        grad_beta = torch.mul(beta, scale).div_(torch.mul(beta, beta).add_(two_b))
        grad_bias = torch.mul(bias, scale).div_(torch.mul(bias, bias).add_(two_b))
        grad_rho = (c0 - a / (r + eps)) * torch.sigmoid(rho) * g
        return grad_beta, grad_bias, grad_rho, None, None, None, None, None
