"""Lesson 4's examples: the weights and batches batch_gradients and accumulated_gradient
differentiate `mse` on, the sequence fit_sequence trains on, hidden_gradient's chain."""

import torch

from grader.lesson_checks.lesson_04 import (
    accumulated_case,
    batches_case,
    fit_sequence_case,
    hidden_case,
)


def _mse(w, x, y):
    return ((x @ w - y) ** 2).mean()


def _grad(w, x, y) -> torch.Tensor:
    """Autograd's gradient of the mean squared error, in float64."""
    leaf = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    x, y = torch.tensor(x, dtype=torch.float64), torch.tensor(y, dtype=torch.float64)
    (grad,) = torch.autograd.grad(_mse(leaf, x, y), leaf)
    return grad


def _close(value, right) -> None:
    assert torch.allclose(torch.tensor(value, dtype=torch.float64), right, atol=1e-9)


def _apart(*values, by: float = 1e-2) -> bool:
    values = [torch.tensor(v, dtype=torch.float64) for v in values]
    return all((a - b).abs().max() > by for i, a in enumerate(values) for b in values[i + 1 :])


def _batches(examples) -> None:
    """w of two small half-integers, two batches of 5 and 4 rows (today's inputs), targets
    shifted by at most 1; the formula's gradients are autograd's, and the slips show."""
    assert len(examples.w) == 2 and all(abs(v) <= 2 and v != 0 for v in examples.w)
    assert len(examples.x0) == len(examples.y0) == 5 and len(examples.x1) == len(examples.y1) == 4
    case = batches_case(examples)
    _close(case["right"][0], _grad(examples.w, examples.x0, examples.y0))
    _close(case["right"][1], _grad(examples.w, examples.x1, examples.y1))
    (g0, g1), summed = case["right"], case["summed"]
    assert _apart(g0, g1, summed[0]) and _apart(g1, case["added_up"][1], summed[1])


def _chunks(examples) -> None:
    """7 rows (today's inputs, targets shifted by at most 1) in chunks of 2 or 3, the last one
    shorter, over an old gradient; the formula's gradient is autograd's, and the slips show."""
    assert examples.chunk_size in (2, 3) and len(examples.x) == len(examples.y) == 7
    assert len(examples.sizes) > 1 and examples.sizes[-1] < examples.chunk_size
    case = accumulated_case(examples)
    _close(case["right"], _grad(examples.w, examples.x, examples.y))
    size = examples.chunk_size
    _close(case["only_last_unscaled"], _grad(examples.w, examples.x[-1:], examples.y[-1:]))
    chunks = [
        _grad(examples.w, examples.x[i : i + size], examples.y[i : i + size])
        for i in range(0, 7, size)
    ]
    _close(case["unscaled"], sum(chunks))
    slips = [case[k] for k in ("by_count", "unscaled", "only_last", "summed", "stale")]
    assert _apart(case["right"], *slips, case["only_last_unscaled"])


def _fit(w, xs, ys, lr, *, carry=True, clear=True) -> float:
    """fit_sequence's loop by autograd, right or with a slip."""
    w = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    s = torch.tensor(0.0, dtype=torch.float64)
    for x_t, y_t in zip(xs, ys, strict=True):
        s = torch.tanh(w * (s.detach() if carry else 0.0) + x_t)
        ((s - y_t) ** 2).backward()
        with torch.no_grad():
            w -= lr * w.grad
        if clear:
            w.grad = None
    return w.item()


def _sequence(examples) -> None:
    """4 steps of tanh from w in [0.3, 0.9] with lr in [0.2, 0.4], inputs and targets in [-1, 1];
    the formula's w is autograd's, and the slips show."""
    assert 0.3 <= examples.w0 <= 0.9 and 0.2 <= examples.lr <= 0.4
    assert len(examples.xs) == len(examples.ys) == 4
    assert all(abs(v) <= 1 for v in examples.xs + examples.ys)
    case = fit_sequence_case(examples)
    args = examples.w0, examples.xs, examples.ys, examples.lr
    assert abs(case["right"] - _fit(*args)) < 1e-9
    assert abs(case["unchanged"] - _fit(*args, carry=False)) < 1e-9
    assert abs(case["not_cleared"] - _fit(*args, clear=False)) < 1e-9
    assert _apart([case["right"]], [case["unchanged"]], [case["not_cleared"]])


def _chain(examples) -> None:
    """h**2 + b h, b from 1 to 4, 2 or 3 times after tanh, at three distinct points in [-2, 2];
    the formula's gradients are autograd's, and the slips show."""
    assert examples.b in (1, 2, 3, 4) and examples.steps in (2, 3)
    assert len(set(examples.x)) == 3 and all(abs(v) <= 2 for v in examples.x)
    shown = eval(examples.formula, {})  # the lesson's own text, a lambda
    h = torch.randn(5, dtype=torch.float64)
    assert torch.allclose(shown(h), examples.g(h))
    chain = [torch.tanh(torch.tensor(examples.x, dtype=torch.float64)).requires_grad_()]
    for _ in range(examples.steps):
        chain.append(examples.g(chain[-1]))
    grads = torch.autograd.grad(chain[-1].sum(), chain)
    case = hidden_case(examples)
    _close(case["right"], grads[0])
    _close(case["of_leaf"], grads[0] * (1 - chain[0].detach() ** 2))
    for value, right in zip(case["later"], grads[1:], strict=True):
        _close(value, right)
    assert _apart(case["right"], case["of_leaf"], *case["later"])


LESSON = "04_retain_graph_and_accumulation"
STRUCTURE = {
    (LESSON, "batch_gradients"): _batches,
    (LESSON, "accumulated_gradient"): _chunks,
    (LESSON, "fit_sequence"): _sequence,
    (LESSON, "hidden_gradient"): _chain,
}
LESSON_CODE = {(LESSON, "batch_gradients"), (LESSON, "accumulated_gradient")}

SLIPS = {
    (LESSON, "batch_gradients"): [
        (
            "def batch_gradients(w, batches, loss):\n"
            "    gradients = []\n"
            "    for x, y in batches:\n"
            "        loss(w, x, y).backward()\n"
            "        gradients.append(w.grad.clone())\n"
            "    return gradients\n",
            "Gradients accumulate",
        ),
        (
            "def batch_gradients(w, batches, loss):\n"
            "    gradients = []\n"
            "    for x, y in batches:\n"
            "        if w.grad is not None:\n"
            "            w.grad.zero_()\n"
            "        loss(w, x, y).backward()\n"
            "        gradients.append(w.grad)\n"
            "    return gradients\n",
            "zero_\\(\\) changed the tensor you stored",
        ),
        (
            "def batch_gradients(w, batches, loss):\n"
            "    gradients = []\n"
            "    for x, y in batches:\n"
            "        w.grad = None\n"
            "        ((x @ w - y) ** 2).sum().backward()\n"
            "        gradients.append(w.grad.clone())\n"
            "    return gradients\n",
            "the loss is the sum of the squared errors",
        ),
    ],
    (LESSON, "accumulated_gradient"): [
        (
            "def accumulated_gradient(w, x, y, chunk_size, loss):\n"
            "    w.grad = None\n"
            "    chunks = list(zip(x.split(chunk_size), y.split(chunk_size)))\n"
            "    for x_chunk, y_chunk in chunks:\n"
            "        (loss(w, x_chunk, y_chunk) / len(chunks)).backward()\n",
            "dividing each chunk's mean by the number of chunks",
        ),
        (
            "def accumulated_gradient(w, x, y, chunk_size, loss):\n"
            "    w.grad = None\n"
            "    for x_chunk, y_chunk in zip(x.split(chunk_size), y.split(chunk_size)):\n"
            "        loss(w, x_chunk, y_chunk).backward()\n",
            "unscaled",
        ),
        (
            "def accumulated_gradient(w, x, y, chunk_size, loss):\n"
            "    for x_chunk, y_chunk in zip(x.split(chunk_size), y.split(chunk_size)):\n"
            "        (loss(w, x_chunk, y_chunk) * len(y_chunk) / len(y)).backward()\n",
            "it still holds the old gradient",
        ),
    ],
    (LESSON, "fit_sequence"): [
        (
            "def fit_sequence(w, xs, ys, lr, cell):\n"
            "    optimizer = torch.optim.SGD([w], lr=lr)\n"
            "    s = torch.tensor(0.0)\n"
            "    for x_t, y_t in zip(xs, ys):\n"
            "        s = cell(w * s.detach() + x_t)\n"
            "        ((s - y_t) ** 2).backward()\n"
            "        optimizer.step()\n",
            "each step used the sum of all the gradients so far",
        ),
        (
            "def fit_sequence(w, xs, ys, lr, cell):\n"
            "    optimizer = torch.optim.SGD([w], lr=lr)\n"
            "    for x_t, y_t in zip(xs, ys):\n"
            "        optimizer.zero_grad()\n"
            "        s = cell(w * 0.0 + x_t)\n"
            "        ((s - y_t) ** 2).backward()\n"
            "        optimizer.step()\n",
            "w did not change",
        ),
        (
            "def fit_sequence(w, xs, ys, lr, cell):\n"
            "    optimizer = torch.optim.SGD([w], lr=lr)\n"
            "    s = torch.tensor(0.0)\n"
            "    for x_t, y_t in zip(xs, ys):\n"
            "        optimizer.zero_grad()\n"
            "        s = cell(w * s + x_t)\n"
            "        ((s - y_t) ** 2).backward()\n"
            "        optimizer.step()\n",
            "The state s carries the graph of the step before",
        ),
    ],
    (LESSON, "hidden_gradient"): [
        (
            "def hidden_gradient(x, g, steps):\n"
            "    h = torch.tanh(x)\n"
            "    for _ in range(steps):\n"
            "        h = g(h)\n"
            "    h.sum().backward()\n"
            "    return x.grad\n",
            "that is x.grad",
        ),
        (
            "def hidden_gradient(x, g, steps):\n"
            "    h = torch.tanh(x)\n"
            "    for _ in range(steps):\n"
            "        h = g(h)\n"
            "    h.retain_grad()\n"
            "    h.sum().backward()\n"
            "    return h.grad\n",
            "the last h",
        ),
        (
            "def hidden_gradient(x, g, steps):\n"
            "    h = g(torch.tanh(x))\n"
            "    h.retain_grad()\n"
            "    later = h\n"
            "    for _ in range(steps - 1):\n"
            "        later = g(later)\n"
            "    later.sum().backward()\n"
            "    return h.grad\n",
            "a later tensor of the chain",
        ),
    ],
}
