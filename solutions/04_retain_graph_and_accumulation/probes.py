"""Lesson 4 (retain_graph and accumulation): what the grader observes of each answer."""

from grader.autograd_use import curvature_reaching, watch_autograd
from grader.probing import autograd_called, by_hand, number, optimizer_steps, shares_of_gradients

# Derivatives asked for by hand: each answer is read as a formula that the grader evaluates itself,
# at points drawn for the submission (grader.judging.by_hand). {test: {function: parameter domains}}
BY_HAND = {
    "test_derive_by_hand": {
        "df": [{"low": -3.0, "high": 3.0}],
        "grad_after_three": [{"low": -3.0, "high": 3.0}],
    },
}

# How the exercises ask their answers to be worked out, read from the answers' code in the grading
# process (grader.judging.how): {test: {function: [rule, ...]}}. The reading may zero a test or
# flag it; see the README's rules, rule by rule, for what is true by construction.
HOW = {
    "test_batch_gradients": {"batch_gradients": ["using autograd"]},
    "test_accumulated_gradient": {
        "accumulated_gradient": ["using autograd", {"as often as asked": ["autograd"]}]
    },
    "test_twice_error": {"fit_sequence": ["using autograd"]},
    "test_hidden_gradient": {"hidden_gradient": ["using autograd"]},
    "test_sgd_step": {"sgd_step": ["with or without an optimizer, as the solution"]},
}


def test_batch_gradients(student, observe, draw):
    n = draw.integer(6, 9)
    w = draw.tensor(3, requires_grad=True)
    batches = [(draw.tensor(n, 3), draw.tensor(n)) for _ in range(3)]
    gradients, used = autograd_called(student.batch_gradients, w, batches)
    observe("the type batch_gradients returns", type(gradients).__name__)
    observe("the gradient of each batch", gradients)
    observe("w.grad afterwards", w.grad)
    observe("batch_gradients called autograd", used)


def test_accumulated_gradient(student, observe, draw):
    size = draw.integer(2, 4)
    n = size * draw.integer(1, 3) + draw.integer(1, size - 1)  # a shorter last chunk
    w = draw.tensor(3, requires_grad=True)
    x, y = draw.tensor(n, 3), draw.tensor(n)
    w.grad = draw.tensor(3)
    direction = draw.tensor(3)
    with watch_autograd() as calls, curvature_reaching(w, direction) as changes:
        shares, used = autograd_called(
            shares_of_gradients, student.accumulated_gradient, w, x, y, size
        )
    shown = f"accumulated_gradient(w, x, y, chunk_size={size}) for {n} rows"
    observe(f"{shown} called autograd", used)
    observe(f"the number of autograd calls of {shown}", len(calls))
    observe(f"w.grad after {shown}", w.grad)
    # One backward over the whole batch, padded with calls that add nothing, gives the right
    # count and w.grad: each micro-batch's own gradient must reach w, in any order.
    shares = sorted(shares, key=lambda share: share.tolist())
    # A gradient typed in by hand and fed through backward() per chunk does not change with w.
    observe(f"how the gradient w got in {shown} changes along a direction", sum(changes, 0 * w))
    observe(f"the gradients that reached w in {shown}, as shares of their sum", shares)


def test_twice_error(student, observe, draw):
    n = draw.integer(4, 7)
    lr = draw.number(0.1, 0.5)
    xs, ys = draw.tensor(n, low=-1.0, high=1.0), draw.tensor(n, low=-1.0, high=1.0)
    w = draw.tensor(low=0.3, high=1.0, requires_grad=True)
    shown = f"fit_sequence(w, xs, ys, lr={lr}) from w = {w.item():.3f}"
    _, used = autograd_called(student.fit_sequence, w, xs, ys, lr)
    observe(f"{shown} called autograd", used)
    observe(f"w after {shown}", w)
    observe("w is still a leaf that requires gradients", w.is_leaf and w.requires_grad)


def test_hidden_gradient(student, observe, draw):
    x = draw.tensor(5, requires_grad=True)
    gradient, used = autograd_called(student.hidden_gradient, x)
    observe("hidden_gradient(x)", gradient)
    observe("hidden_gradient called autograd", used)


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
        _, stepped = optimizer_steps(
            student.sgd_step, [params[0], unused, params[1], params[2]], lr
        )
        shown = f"sgd_step(params, lr={lr}), step {step}"
        observe(f"{shown} stepped a torch.optim optimizer", bool(stepped))
        for i, p in enumerate(params):
            observe(f"parameter {i} after {shown}", p)
            observe(
                f"parameter {i} is still a leaf that requires gradients",
                p.is_leaf and p.requires_grad,
            )
            observe(f"parameter {i}'s .grad is cleared", p.grad is None or not bool(p.grad.any()))
        observe(f"the unused parameter (.grad None) after {shown}", unused)
