"""Lesson 9's examples: the functions and inputs saved_bytes, rectified_tanh_grad and
grad_with_saved_as are tried on."""

import torch
from torch.autograd.graph import saved_tensors_hooks


def _saving(examples) -> None:
    """v * v * t with v = act(t), act's node saving one tensor, on 3 to 8 float32 or float64
    numbers; the bytes the visible test wants, written out, are those of the distinct storages
    the graph saves, and the slips' numbers differ from them."""
    from grader.lesson_checks.lesson_09 import saved_bytes_case

    assert examples.act in ("tanh", "sigmoid", "exp", "sin", "cos")
    assert 3 <= len(examples.x) <= 8 and examples.dtype in ("float32", "float64")
    x = torch.tensor(examples.x, dtype=getattr(torch, examples.dtype))
    saves = []
    with saved_tensors_hooks(lambda t: saves.append(t) or t, lambda t: t):
        examples.f(x.clone().requires_grad_())
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in saves}
    right, per_save, elements, four_bytes = saved_bytes_case(examples)
    assert (len(saves), len(storages)) == (5, 3)
    assert right == sum(storages.values())
    assert per_save == sum(t.numel() * t.element_size() for t in saves)
    assert right not in (per_save, elements) and elements == 3 * x.numel()
    assert (four_bytes == right) == (examples.dtype == "float32")
    body = examples.formula.replace("; ", "\n    return ", 1)
    namespace = {"torch": torch}
    exec(f"def shown(t):\n    {body}\n", namespace)  # the lesson's own text, two statements
    assert torch.allclose(namespace["shown"](x), examples.f(x), rtol=1e-12, atol=1e-12)


def _rectified(examples) -> None:
    """g(h) = fn(a h) at three float32 numbers, one negative, two positive; the values the
    visible test wants, written out, are autograd's, and every slip's differ from them."""
    from grader.lesson_checks.lesson_09 import rectified_tanh_case

    assert examples.fn in ("log1p", "sin", "exp") and 0.5 <= examples.a <= 2
    shown = eval(examples.formula, {"torch": torch})
    u = torch.linspace(-0.3, 1, 7, dtype=torch.float64)
    assert torch.allclose(shown(u), examples.g(u), rtol=1e-12, atol=1e-12)
    x = torch.tensor(examples.x, dtype=torch.float64)
    assert len(x) == 3 and (x < 0).sum() == 1 and (x > 0).sum() == 2
    leaf = x.clone().requires_grad_()
    (autograd,) = torch.autograd.grad(examples.g(torch.tanh(leaf).clamp(min=0)).sum(), leaf)
    right, *slips = rectified_tanh_case(examples)
    assert torch.allclose(right, autograd, rtol=1e-12, atol=1e-12)
    assert torch.allclose(right, torch.tensor(examples.gradient, dtype=torch.float64))
    for wrong in slips:
        assert torch.isfinite(wrong).all() and (wrong - right).abs().max() > 1e-2


def _stored(examples) -> None:
    """p(t) e^t, p = sin or cos, at three distinct float32 numbers in [-2, 2], none 0, stored in
    bfloat16; the values the visible test wants, written out, are those autograd gives under
    the hooks, and every slip's differ from them by more than the test's tolerance."""
    from grader.lesson_checks.lesson_09 import saved_as_case

    assert examples.p in ("sin", "cos") and examples.stored == "bfloat16"
    assert len(set(examples.x)) == 3 and all(v != 0 and -2 <= v <= 2 for v in examples.x)
    shown = eval(examples.formula, {"torch": torch})
    x = torch.tensor(examples.x)
    assert torch.equal(shown(x), examples.f(x))

    def hooked(pack, unpack):
        t = x.clone().requires_grad_()
        with saved_tensors_hooks(pack, unpack):
            loss = examples.f(t).sum()
        return torch.autograd.grad(loss, t)[0]

    def stored_in(dtype):
        return hooked(lambda t: (t.dtype, t.to(dtype)), lambda p: p[1].to(p[0]))

    right, exact, unrestored, other = saved_as_case(examples)
    assert torch.allclose(right, stored_in(torch.bfloat16), rtol=0, atol=1e-6)
    assert torch.allclose(exact, hooked(lambda t: t, lambda t: t), rtol=0, atol=1e-6)
    assert torch.allclose(
        unrestored, hooked(lambda t: t.to(torch.bfloat16), lambda t: t), atol=1e-6
    )
    assert torch.allclose(other, stored_in(torch.float16), rtol=0, atol=1e-6)
    for wrong in (exact, unrestored, other):
        assert not torch.allclose(wrong.double(), right.double(), rtol=1e-5, atol=1e-6)


LESSON = "09_saved_tensors_and_memory"
STRUCTURE = {
    (LESSON, "saved_bytes"): _saving,
    (LESSON, "rectified_tanh_grad"): _rectified,
    (LESSON, "grad_with_saved_as"): _stored,
}

LESSON_CODE = set(STRUCTURE)  # the answers use saved_tensors_hooks, imported above them

SLIPS = {
    (LESSON, "saved_bytes"): [
        (
            "def saved_bytes(f, x):\n"
            "    sizes = []\n"
            "    with saved_tensors_hooks(\n"
            "        lambda t: sizes.append(t.numel() * t.element_size()) or t, lambda t: t\n"
            "    ):\n"
            "        f(x.clone().requires_grad_())\n"
            "    return sum(sizes)\n",
            "that adds up every tensor each time a node saves it",
        ),
        (
            "def saved_bytes(f, x):\n"
            "    found = {}\n"
            "    with saved_tensors_hooks(\n"
            "        lambda t: found.setdefault(t.untyped_storage().data_ptr(), t.numel()) and t,\n"
            "        lambda t: t,\n"
            "    ):\n"
            "        f(x.clone().requires_grad_())\n"
            "    return sum(found.values())\n",
            "that is a number of elements, not of bytes",
        ),
        (
            "def saved_bytes(f, x):\n    return 0\n",
            "nothing was saved",
        ),
    ],
    (LESSON, "rectified_tanh_grad"): [
        (
            "def rectified_tanh_grad(x, g):\n"
            "    x = x.clone().requires_grad_()\n"
            "    h = torch.tanh(x)\n"
            "    h.data[h.data < 0] = 0\n"
            "    g(h).sum().backward()\n"
            "    return x.grad\n",
            "a silently wrong gradient where x < 0",
        ),
        (
            "def rectified_tanh_grad(x, g):\n"
            "    x = x.clone().requires_grad_()\n"
            "    g(torch.tanh(x)).sum().backward()\n"
            "    return x.grad\n",
            r"that is the gradient of sum\(g\(tanh\(x\)\)\)",
        ),
        (
            "def rectified_tanh_grad(x, g):\n"
            "    x = x.clone().requires_grad_()\n"
            "    h = torch.tanh(x)\n"
            "    h = h - torch.where(h < 0, h, 0.0).detach()\n"
            "    g(h).sum().backward()\n"
            "    return x.grad\n",
            "what set the negative values to 0 was detached",
        ),
    ],
    (LESSON, "grad_with_saved_as"): [
        (
            "def grad_with_saved_as(f, x, dtype):\n"
            "    x = x.clone().requires_grad_()\n"
            "    f(x).sum().backward()\n"
            "    return x.grad\n",
            "that is the exact gradient",
        ),
        (
            "def grad_with_saved_as(f, x, dtype):\n"
            "    x = x.clone().requires_grad_()\n"
            "    with saved_tensors_hooks(lambda t: t.to(dtype), lambda t: t):\n"
            "        loss = f(x).sum()\n"
            "    loss.backward()\n"
            "    return x.grad\n",
            "backward\\(\\) got the saved tensors back in dtype",
        ),
        (
            "def grad_with_saved_as(f, x, dtype):\n"
            "    x = x.clone().requires_grad_()\n"
            "    with saved_tensors_hooks(\n"
            "        lambda t: (t.dtype, t.to(torch.float16)), lambda p: p[1].to(p[0])\n"
            "    ):\n"
            "        loss = f(x).sum()\n"
            "    loss.backward()\n"
            "    return x.grad\n",
            "stored in another 16-bit dtype",
        ),
    ],
}
