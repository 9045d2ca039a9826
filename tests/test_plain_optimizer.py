"""The CPU training loop's written-out RMSprop (``_core/_trainer.PlainRMSprop``)
is ``torch.optim.RMSprop`` + ``clip_grad_norm_`` + ``CosineAnnealingWarmRestarts``
bit for bit: the same weights after steps that cross a warm restart, with and
without momentum, in float32 and float64, with a parameter that gets no
gradient; and a default fit is the fit the torch optimizer gives."""

import numpy as np
import pytest
import torch

from sklearn_difftrees._core import _trainer
from sklearn_difftrees._core._trainer import PlainRMSprop, cosine_lr


@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_plain_rmsprop_is_torchs(momentum, dtype):
    shapes = [(15, 4), (15,), (16, 3), (2,)]
    lr, cycle, max_norm = 1e-2, 7, 0.05

    def params():
        g = torch.Generator().manual_seed(0)
        return [torch.randn(s, generator=g, dtype=dtype, requires_grad=True) for s in shapes]

    ref, plain = params(), params()
    opt = torch.optim.RMSprop(ref, lr=lr, momentum=momentum, eps=1e-5)
    sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=cycle)
    mine = PlainRMSprop(plain, lr, momentum)
    g = torch.Generator().manual_seed(1)
    for step in range(1, 20):
        grads = [torch.randn(s, generator=g, dtype=dtype) for s in shapes[:-1]]
        opt.zero_grad(set_to_none=True)
        mine.zero_grad()
        for p, q, gr in zip(ref, plain, grads):  # the last parameter: no gradient
            p.grad, q.grad = gr.clone(), gr.clone()
        torch.nn.utils.clip_grad_norm_(ref, max_norm)
        mine.clip(max_norm)
        opt.step()
        sched.step()
        mine.step()
        mine.lr = cosine_lr(lr, step, cycle)
        assert mine.lr == opt.param_groups[0]["lr"]
        for p, q in zip(ref, plain):
            assert torch.equal(p, q)


def test_default_fit_equals_the_torch_optimizers(monkeypatch):
    from sklearn.datasets import make_classification

    from sklearn_difftrees import DGTClassifier

    X, y = make_classification(300, 6, n_informative=4, n_classes=3, random_state=0)
    params = dict(max_depth=3, max_iter=12, random_state=0)
    plain = DGTClassifier(**params).fit(X, y)
    # The same fit with torch.optim.RMSprop and torch's scheduler.
    original, make = _trainer.TrainingRun.__init__, _trainer.make_optimizer

    def init(self, *args, **kwargs):
        original(self, *args, **{**kwargs, "optimizer": "torch-rmsprop"})
        assert not isinstance(self.opt, PlainRMSprop)

    monkeypatch.setattr(_trainer.TrainingRun, "__init__", init)
    monkeypatch.setattr(_trainer, "make_optimizer",
                        lambda name, *a, **kw: make("rmsprop", *a, **kw))
    ref = DGTClassifier(**params).fit(X, y)
    np.testing.assert_array_equal(plain.tree_.weights, ref.tree_.weights)
    np.testing.assert_array_equal(plain.predict_proba(X), ref.predict_proba(X))
