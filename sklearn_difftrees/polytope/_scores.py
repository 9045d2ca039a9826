"""Polytope scores as torch autograd Functions with hand-written backward
passes (imported only inside ``fit``, through ``_training``).

``s[v] = sum_k r[v, k] softplus(beta[v, k] . x + bias[v, k])`` (eq. 2) over
every facet of every node dominates a dense training step. Each Function
computes the projections with one matrix product and keeps the
pre-activations, so that its backward pass (``softplus' = sigmoid``) is a
few tensor operations instead of autograd's chain of matmul, broadcast,
softplus and sum nodes.
"""

import torch
import torch.nn.functional as F

__all__ = ["_NodeScores", "_StumpScores"]


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
