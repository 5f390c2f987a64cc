"""Lesson 4 (retain_graph and accumulation): what the grader observes of each answer."""

from grader.autograd_use import watch_autograd
from grader.probing import autograd_called, by_hand, number, shares_of_gradients


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
    k = draw.integer(2, 4)
    m = draw.choice([size for size in range(2, 6) if size != k])
    w = draw.tensor(3, requires_grad=True)
    x, y = draw.tensor(k * m, 3), draw.tensor(k * m)
    w.grad = draw.tensor(3)
    with watch_autograd() as calls:
        shares, used = autograd_called(
            shares_of_gradients, student.accumulated_gradient, w, x, y, k
        )
    observe("accumulated_gradient called autograd", used)
    observe("the number of autograd calls", len(calls))
    observe("w.grad afterwards", w.grad)
    # One backward over the whole batch, padded with calls that add nothing, gives the right
    # count and w.grad: each micro-batch's own gradient must reach w, in turn.
    observe("each gradient that reached w, as a share of their sum", shares)


def test_twice_error(student, observe, draw):
    n, steps = draw.integer(5, 8), draw.integer(3, 6)
    lr = draw.number(0.1, 0.5)
    x, y = draw.tensor(n), draw.tensor(n)
    a = draw.tensor(low=0.3, high=1.5, requires_grad=True)
    b = draw.tensor(low=0.5, high=1.5, requires_grad=True)
    _, used = autograd_called(student.fit, a, b, x, y, lr, steps)
    observe("fit called autograd", used)
    observe("a after fit", a)
    observe("b after fit", b)
    observe(
        "a and b are still leaves that require gradients",
        [
            a.is_leaf and a.requires_grad,
            b.is_leaf and b.requires_grad,
        ],
    )


def test_hidden_gradient(student, observe, draw):
    x = draw.tensor(5, requires_grad=True)
    gradient, used = autograd_called(student.hidden_gradient, x)
    observe("hidden_gradient(x)", gradient)
    observe("hidden_gradient called autograd", used)


def test_derive_by_hand(student, observe, draw):
    for x in [1.0] + [draw.number(-3.0, 3.0) for _ in range(4)]:
        observe(f"df({x})", number(by_hand(student.df, x)), atol=1e-4)
        observe(f"grad_after_three({x})", number(by_hand(student.grad_after_three, x)), atol=1e-4)


def test_sgd_step(student, observe, draw):
    lr = draw.number(0.05, 0.3)
    target = draw.tensor(4)
    w = draw.tensor(4, requires_grad=True)
    for step in ["one", "two"]:
        ((w - target) ** 2).sum().backward()
        student.sgd_step(w, lr)
        observe(f"w after {step} sgd_step", w)
        observe("w is still a leaf", w.is_leaf)
        observe("w still requires gradients", w.requires_grad)
        observe("w.grad is cleared", w.grad is None or not bool(w.grad.any()))
