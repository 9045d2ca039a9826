"""Torch side of the tree-isotonic (PAV) program (imported only while training).

Two implementations of the same map ``q -> (a, z)`` of problem (3)/(4) of
Zantedeschi et al. (2021):

* :class:`TreeIsotonicFunction`, a :class:`torch.autograd.Function` over the
  compiled kernel (``cython_src/_pav.pyx`` through :mod:`._pav`): forward by
  Algorithm 1, backward by the closed-form Jacobian of Section 3.2. It is the
  default on the CPU, and on a GPU for training batches (at most
  :data:`KERNEL_ROWS_ON_DEVICE` rows: the batch goes to the host and back),
  so CPU and GPU training steps share the same projection.
* :func:`tree_isotonic_torch`, the same generalised PAV written with torch
  operations (any device, differentiated by autograd). Its merge loop reads
  every pooled value back from the device, a fixed cost per merge, while the
  kernel's cost on the host grows with the rows; so it is the default on a GPU
  for larger batches (the pruning vector solved on all training rows), and a
  second opinion in the tests. On a CPU it is 2-11 times slower than the
  kernel.

Both take ``lam`` as the total penalty of problem (4); the layer passes the
per-sample pruning strength times the number of rows.

:func:`node_rewards` computes ``q`` from the split scores (Lemma 1).
"""

import torch

from ._pav import tree_isotonic_backward, tree_isotonic_forward

__all__ = ["KERNEL_ROWS_ON_DEVICE", "TreeIsotonicFunction", "node_rewards", "tree_isotonic",
           "tree_isotonic_torch"]

#: Largest batch of a non-CPU tensor that ``backend="auto"`` sends to the
#: compiled kernel (the largest training batch of ``batch_size="auto"``).
#: Measured on an H200 with its Xeon host, forward + backward of a layer
#: over 50 features: 1,024 rows 4.1 ms (kernel) vs 5.2 ms (torch) at depth
#: 4, 8.8 vs 11.6 at depth 6; 8,192 rows 14.2 vs 6.9 and 55.9 vs 11.9.
KERNEL_ROWS_ON_DEVICE = 1024


def node_rewards(s, depth):
    """Node rewards ``q`` (n, 2**(depth+1)-1) from split scores ``s`` (n, 2**depth-1).

    ``q_t = min`` over the ancestors of ``t`` of ``+s`` (``t`` in the right
    subtree) or ``-s`` (left subtree); ``q_root = 1`` (Lemma 1). Heap order;
    the gradient flows through the minimizing ancestor (Danskin).
    """
    n = s.shape[0]
    levels = [torch.ones(n, 1, dtype=s.dtype, device=s.device)]
    path = None  # min over the ancestors, per node of the current level
    for d in range(depth):
        sd = s[:, 2**d - 1 : 2 ** (d + 1) - 1]
        child = torch.stack((-sd, sd), dim=2).reshape(n, 2 ** (d + 1))
        if path is not None:
            child = torch.minimum(path.repeat_interleave(2, dim=1), child)
        path = child
        levels.append(child)
    return torch.cat(levels, dim=1)


class TreeIsotonicFunction(torch.autograd.Function):
    """``(a, z) = T_lam(q)`` through the compiled kernel (CPU tensors)."""

    @staticmethod
    def forward(ctx, q, lam):
        q_np = q.detach().cpu().numpy()
        a, z, pav_ctx = tree_isotonic_forward(q_np, float(lam))
        ctx.pav_ctx = pav_ctx
        ctx.device = q.device
        return (
            torch.from_numpy(a).to(q.device),
            torch.from_numpy(z).to(q.device),
        )

    @staticmethod
    def backward(ctx, grad_a, grad_z):
        ga = None if grad_a is None else grad_a.detach().cpu().numpy()
        gz = None if grad_z is None else grad_z.detach().cpu().numpy()
        grad_q = tree_isotonic_backward(ctx.pav_ctx, ga, gz)
        return torch.from_numpy(grad_q).to(ctx.device), None


def _pooled_value(vals, c):
    """Proposition 2 on the entries ``vals`` (1-D) with ``c = lam * |G|``.

    Differentiable in ``vals``: ``a(k*) = sum of the k* largest / (c + k*)``
    clipped to [0, 1]; ``k* = 0`` (value 0) when ``c > 0`` and every entry is
    negative.
    """
    srt = torch.sort(vals, descending=True).values
    m = srt.shape[0]
    k = torch.arange(1, m + 1, dtype=srt.dtype, device=srt.device)
    ak = torch.cumsum(srt, 0) / (c + k)
    nxt = torch.cat((srt[1:], srt.new_full((1,), -float("inf"))))
    if c > 0 and float(srt[0].detach()) < 0.0:
        return srt[0] * 0.0
    kstar = int(torch.nonzero(ak.detach() > nxt.detach())[0, 0])
    return _clip_unit(ak[kstar])


def _clip_unit(a):
    """``clip(a, 0, 1)`` with the package's tie rule: gradient only strictly inside.

    ``torch.clamp`` passes the gradient at ``a == 0`` and ``a == 1``; the
    compiled kernel treats a boundary value as clipped (``interior`` iff
    ``0 < a < 1``). Both backends follow the kernel's rule.
    """
    inside = (a.detach() > 0.0) & (a.detach() < 1.0)
    return torch.where(inside, a, a.detach().clamp(0.0, 1.0))


def _clip_traversal(v, a):
    """``z = clip(v, 0, a)`` with the kernel's tie rule.

    ``dz/dv = 1`` iff ``0 < v < a``; ``dz/da = 1`` iff ``v >= a``; else 0
    (``torch.minimum`` would split the gradient evenly at ``v == a``).
    """
    a = a.unsqueeze(0).expand_as(v)
    return torch.where((v > 0.0) & (v < a), v, torch.where(v >= a, a, torch.zeros_like(v)))


def _pooled_columns(v, lam):
    """Proposition 2 for every single-node group at once (columns of ``v``)."""
    n = v.shape[0]
    srt = torch.sort(v, dim=0, descending=True).values
    k = torch.arange(1, n + 1, dtype=v.dtype, device=v.device)[:, None]
    ak = torch.cumsum(srt, 0) / (lam + k)
    nxt = torch.cat((srt[1:], torch.full_like(srt[:1], -float("inf"))))
    first = torch.argmax((ak.detach() > nxt.detach()).to(torch.int8), dim=0)
    a = _clip_unit(ak.gather(0, first[None, :])[0])
    if lam > 0:  # k* = 0 when every entry is negative
        a = torch.where(srt[0] < 0, srt[0] * 0.0, a)
    return a


def tree_isotonic_torch(q, lam):
    """Pure-torch generalised PAV (Algorithm 1): ``(a, z)``, autograd-differentiable.

    Parameters
    ----------
    q : tensor of shape (n, 2**(depth+1)-1), heap order, any device/float dtype
    lam : float >= 0, total penalty of problem (4)

    Each group solve sorts the group's entries (Proposition 2); the choice of
    the merge (largest violating ``a_t``) is made on detached values, so
    autograd differentiates the selected closed form, which is the Jacobian of
    Section 3.2 (1 / (lam |G| + k*) on the support set, 0 outside (0, 1)).

    Tie rule (shared with the kernel, so that CPU and GPU fits agree): a group
    value exactly 0 or 1 counts as clipped (no gradient); ``z = clip(v, 0, a)``
    passes the gradient to ``v`` iff ``0 < v < a`` and to ``a`` iff
    ``v >= a``; among equal violators, the lowest heap index merges first.
    """
    n, T = q.shape
    v = q + 0.5
    single = _pooled_columns(v, lam)
    val = {t: single[t] for t in range(T)}  # group id (top node) -> a_G (tensor)
    aval = dict(enumerate(single.detach().cpu().tolist()))  # the same, as floats
    members = {t: [t] for t in range(T)}
    grp = list(range(T))
    while True:
        best, besta = -1, -1.0
        for t in range(1, T):
            if grp[t] != t:
                continue
            at = aval[t]
            if at > aval[grp[(t - 1) // 2]] and at > besta:
                best, besta = t, at
        if best < 0:
            break
        pg = grp[(best - 1) // 2]
        members[pg] += members.pop(best)
        for s in members[pg]:
            grp[s] = pg
        del val[best], aval[best]
        nodes = members[pg]
        val[pg] = _pooled_value(v[:, nodes].reshape(-1), lam * len(nodes))
        aval[pg] = float(val[pg].detach())
    a = torch.stack([val[grp[t]] for t in range(T)])
    z = _clip_traversal(v, a)
    return a, z


# torch.compile runs the solver as it is, outside the traced graph: its kernel
# works on numpy arrays and its pure-torch path on Python pools, neither of
# which Dynamo traces (a compiled LatentTreeLayer failed in either backend).
@torch.compiler.disable
def tree_isotonic(q, lam, backend="auto"):
    """``(a, z)`` by the compiled kernel (``"kernel"``) or pure torch (``"torch"``).

    ``"auto"`` is the kernel for CPU tensors and for batches of at most
    :data:`KERNEL_ROWS_ON_DEVICE` rows on another device (they travel to the
    host and back), pure torch for larger batches there.
    """
    if backend == "auto":
        on_host = q.device.type == "cpu" or q.shape[0] <= KERNEL_ROWS_ON_DEVICE
        backend = "kernel" if on_host else "torch"
    if backend == "kernel":
        if q.dtype not in (torch.float32, torch.float64):  # e.g. half: solved in float32
            a, z = TreeIsotonicFunction.apply(q.float(), float(lam))
            return a.to(q.dtype), z.to(q.dtype)
        return TreeIsotonicFunction.apply(q, float(lam))
    return tree_isotonic_torch(q, float(lam))

