"""Unfused pieces of DGT's forward pass, the oracles of the fused route's tests."""

import torch


class ScaledSignSTE(torch.autograd.Function):
    """The unfused decisions: ``sign(a) * scale``, straight-through gradient ``1{|a| <= 1}``."""

    @staticmethod
    def forward(ctx, a, scale):
        ctx.save_for_backward(a)
        return torch.sign(a) * scale

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * (a.abs() <= 1).to(grad.dtype), None
