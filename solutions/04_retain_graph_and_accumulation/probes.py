"""Lesson 4 (retain_graph and accumulation): what the grader observes of each answer."""

import torch

from grader.lesson_checks.lesson_04 import RowLimit
from grader.probing import by_hand, number

# Derivatives asked for by hand: each answer is read as a formula that the grader evaluates itself,
# at points drawn for the submission (grader.judging.by_hand). {test: {function: parameter domains}}
BY_HAND = {
    "test_derive_by_hand": {
        "df": [{"low": -3.0, "high": 3.0}],
        "grad_after_three": [{"low": -3.0, "high": 3.0}],
    },
}

# How the exercises ask their answers to be worked out, read from the answers' code in the grading
# process (grader.judging.how): {test: {function: [rule, ...]}}. The reading only flags answers for
# the instructor: the exercises make their rules inevitable (the README's rules, rule by rule).
HOW = {
    "test_batch_gradients": {"batch_gradients": ["using autograd"]},
    "test_accumulated_gradient": {"accumulated_gradient": ["using autograd"]},
    "test_twice_error": {"fit_sequence": ["using autograd"]},
    "test_hidden_gradient": {"hidden_gradient": ["using autograd"]},
    "test_sgd_step": {"sgd_step": ["with or without an optimizer, as the solution"]},
}


def _mean_loss(phi):
    """A batch loss of the linear model x @ w: phi applied to each row's residual, averaged."""
    return lambda w, x, y: phi(x @ w - y).mean()


def _uniform(draw, *shape):
    """A float64 tensor of the shape, with values between -1 and 1: moderate residuals."""
    return draw.tensor(*shape, low=-1.0, high=1.0, dtype=torch.float64)


def test_batch_gradients(student, observe, draw):
    n = draw.integer(6, 9)
    w = _uniform(draw, 3).requires_grad_()
    batches = [(_uniform(draw, n, 3), _uniform(draw, n)) for _ in range(3)]
    loss = _mean_loss(draw.function())
    gradients = student.batch_gradients(w, batches, loss)
    observe("the type batch_gradients returns", type(gradients).__name__)
    observe("the gradient of each batch, for a loss drawn at grading time", gradients)
    observe("w.grad afterwards", w.grad)


def test_accumulated_gradient(student, observe, draw):
    for old in ("an old gradient", "None"):  # as the wording says w.grad may be
        size = draw.integer(2, 4)
        n = size * draw.integer(1, 3) + draw.integer(1, size - 1)  # a shorter last chunk
        w = _uniform(draw, 3).requires_grad_()
        x, y = _uniform(draw, n, 3), _uniform(draw, n)
        w.grad = _uniform(draw, 3) if old != "None" else None
        # The loss takes at most `size` rows at a time: only chunks reach it (its drawn function,
        # evaluated by the grading process, takes no more values at a time).
        phi = draw.function(rows=size)
        loss = RowLimit(_mean_loss(phi), size, "a loss drawn at grading time")
        student.accumulated_gradient(w, x, y, size, loss)
        shown = f"accumulated_gradient(w, x, y, chunk_size={size}, loss) for {n} rows"
        observe(f"w.grad after {shown}, w.grad {old} before, for a drawn loss", w.grad)
        observe(f"w after {shown}", w)


def test_twice_error(student, observe, draw):
    n = draw.integer(4, 7)
    lr = draw.number(0.1, 0.5)
    xs, ys = _uniform(draw, n), _uniform(draw, n)
    w = draw.tensor(low=0.3, high=1.0, dtype=torch.float64, requires_grad=True)
    f = draw.function()
    cell = lambda t: f(torch.tanh(t))  # noqa: E731  (drawn, and bounded like tanh's)
    shown = f"fit_sequence(w, xs, ys, lr={lr}, cell) from w = {w.item():.3f}"
    student.fit_sequence(w, xs, ys, lr, cell)
    observe(f"w after {shown}, for a cell drawn at grading time", w)
    observe("w is still a leaf that requires gradients", w.is_leaf and w.requires_grad)


def test_hidden_gradient(student, observe, draw):
    for steps in (2, 3):  # the first tensor of the chain, one or two tensors before the last
        # tanh saturates at x = 20 (tanh'(x) rounds to 0): x.grad there says nothing of the
        # gradient with respect to tanh(x), which stays finite
        x = torch.cat(
            [draw.tensor(4, dtype=torch.float64), torch.tensor([20.0], dtype=torch.float64)]
        )
        x.requires_grad_(True)
        f = draw.function()

        def g(t, f=f):  # drawn, and bounded like tanh's
            return f(torch.tanh(t))

        observe(
            f"hidden_gradient(x, g, {steps}) for g drawn at grading time",
            student.hidden_gradient(x, g, steps),
        )


def _plain(value):
    return isinstance(value, int | float) and not isinstance(value, bool)


def test_derive_by_hand(student, observe, draw):
    for x in [1.0] + [draw.number(-3.0, 3.0) for _ in range(4)]:
        # each function named as student.NAME: the judge reads its "by hand" rule from here
        for name, value in (
            ("df", by_hand(student.df, x)),
            ("grad_after_three", by_hand(student.grad_after_three, x)),
        ):
            observe(f"{name}({x}) is a plain Python number", _plain(value))
            observe(f"{name}({x})", number(value), atol=1e-4)


def test_sgd_step(student, observe, draw):
    lr = draw.number(0.05, 0.3)
    shapes = [(4,), (2, 3), ()]
    params = [draw.tensor(*shape, requires_grad=True) for shape in shapes]
    targets = [draw.tensor(*shape) for shape in shapes]
    unused = draw.tensor(3, requires_grad=True)
    for step in ["one", "two"]:
        sum(((p - t) ** 2).sum() for p, t in zip(params, targets, strict=True)).backward()
        student.sgd_step([params[0], unused, params[1], params[2]], lr)
        shown = f"sgd_step(params, lr={lr}), step {step}"
        for i, p in enumerate(params):
            observe(f"parameter {i} after {shown}", p)
            observe(
                f"parameter {i} is still a leaf that requires gradients",
                p.is_leaf and p.requires_grad,
            )
            observe(f"parameter {i}'s .grad is cleared", p.grad is None or not bool(p.grad.any()))
        observe(f"the unused parameter (.grad None) after {shown}", unused)
