"""Lesson 9's visible checks: `saved_bytes`, `rectified_tanh_grad`, `grad_with_saved_as` and
`segment_checkpoint_bytes`.

The test cells call the student's function themselves (with `call` or `call_with_autograd`,
inside one of the `explaining_...` blocks below where an error needs a word of explanation) and
hand what it returned to a check here, with the values the cell writes out. The visible tests use
the lesson's examples; the hidden ones hand the answers functions drawn at random
(`grader.drawn_functions`, `DrawnActivation`), and a check told `drawn=True` says so when the
values are wrong.
"""

import contextlib

import torch

from grader.checks import CheckFailed, check_drawn_tensor, one_number
from grader.lesson_checks.lesson_07 import DrawnActivation

__all__ = [
    "DrawnActivation",
    "check_grad_with_saved_as",
    "check_rectified_tanh",
    "check_saved_bytes",
    "check_segment_bytes",
    "explaining_inplace_errors",
    "rectified_tanh_case",
    "saved_as_case",
    "saved_bytes_case",
]


def _check_count(result, expected, name, mistakes, advice="") -> None:
    """Check a number of bytes: a whole number equal to `expected`; `mistakes` maps an
    explanation to the number a typical mistake gives; `advice` follows any other wrong number."""
    value = one_number(result, name, "a number of bytes")
    if value == expected:
        return
    # a drawn input can make two mistakes give one number: the message names each
    found = [explanation for explanation, wrong in mistakes.items() if value == wrong]
    if found:
        raise CheckFailed(f"{name} returned {value:g}, which is wrong: " + " Or ".join(found))
    raise CheckFailed(f"{name} returned {value:g}, but the answer is {expected:g}.{advice}")


# Exercise 2 · How many bytes a graph saves


def check_saved_bytes(
    result,
    expected,
    per_save,
    elements,
    four_bytes,
    text,
    own_bytes=None,
    x_sized=None,
    per_slice=None,
) -> None:
    """Check saved_bytes(f, x)'s result against `expected`; the numbers typical mistakes give:
    `per_save`, the bytes added up once per save; `elements`, the number of elements of the
    distinct storages instead of bytes; `four_bytes`, 4 bytes per element whatever the dtype;
    `own_bytes`, each storage counted by the elements of a tensor saved in it (a slice's, not
    the storage's); `x_sized`, every storage counted as large as x; `per_slice`, a storage counted
    once for each place in it (data_ptr()) a saved tensor starts at."""
    every_save = (
        "that adds up every tensor each time a node saves it, but a tensor saved by two nodes "
        "(or twice by one) holds its memory once: count each storage once (section 3)."
    )
    mistakes = {
        "nothing was saved: run f on a copy of x that requires gradients, or autograd records "
        "no graph and saves nothing (section 1).": 0,
        every_save: per_save,
        "that is a number of elements, not of bytes: each element of a float32 tensor takes 4 "
        "bytes, of a float64 tensor 8 (section 3).": elements,
    }
    if four_bytes != expected:
        mistakes[
            "every element was counted as 4 bytes, but the size of an element depends on the "
            "dtype: 8 bytes in float64 (section 3)."
        ] = four_bytes
    if own_bytes is not None:
        mistakes[
            "that counts the elements of the tensors saved, but a saved slice keeps the whole "
            "storage it is a view of in memory: count the bytes of each storage (section 3)."
        ] = own_bytes
    if x_sized is not None:
        mistakes[
            "that counts every storage as large as x, but a graph can save tensors of other "
            "sizes (here a sum, one number): count the bytes of each storage (section 3)."
        ] = x_sized
    if per_slice is not None:
        mistakes[
            "that counts one storage several times, once for each slice of it that was saved: "
            "slices of one tensor share its storage, which holds its memory once (section 3)."
        ] = per_slice
    _check_count(result, expected, f"saved_bytes({text}, x)", mistakes)


def saved_bytes_case(example) -> tuple[int, int, int, int]:
    """saved_bytes' visible example (`example`: its Saving, f(t) = v * v * t with v = act(t), on
    x of n numbers): the right number of bytes and those of the slips check_saved_bytes names,
    written out. act saves one tensor (its input t or its output v), v * v saves v twice and
    (v * v) * t saves v * v and t: 5 saves, 3 storages (t, v, v * v) of n numbers each. Only the
    example's own function: nothing here takes an f."""
    n, size = len(example.x), {"float32": 4, "float64": 8}[example.dtype]
    storages, saves = 3, 5
    return storages * n * size, saves * n * size, storages * n, storages * n * 4


# Exercise 3 · Fix the in-place bug


@contextlib.contextmanager
def explaining_inplace_errors():
    """Around the call of rectified_tanh_grad: explain the in-place error, or a graph cut."""
    try:
        yield
    except CheckFailed as failure:
        message = str(failure)
        if "modified by an inplace operation" in message:
            message += (
                "\ntanh() saved its output h for the way back (section 1), and the assignment "
                "h[...] = ... (like any in-place change of h) then writes into h in place, under "
                "no_grad() too: backward() can no longer use what tanh saved (section 2)."
            )
        elif "does not require grad" in message:
            message += (
                "\nThe loss no longer depends on the tracked x: a detach() (or no_grad()) cut "
                "the graph, so there is nothing to differentiate (section 2)."
            )
        raise CheckFailed(message) from None


def check_rectified_tanh(
    gradient, expected, hidden_change, unrectified, leaky=None, atol=1e-4, drawn=False
):
    """Check rectified_tanh_grad(x, g)'s result against `expected`; `hidden_change`: what it
    returns when h.data is changed in place, so that tanh's backward uses 1 - 0**2 where h was
    set to 0; `unrectified`: the gradient of sum(g(tanh(x))); `leaky`: what it returns when the
    zeroing is a detached tensor subtracted, so tanh's gradient reaches x where x < 0 too;
    `drawn`: g was drawn at random."""
    mistakes = {
        "a silently wrong gradient where x < 0 (it should be 0 there): the values were set to 0 "
        "where autograd does not see it (through .data, which hides the change from autograd, "
        "or on x before it was tracked), so setting them to 0 is not differentiated (section "
        "2).": hidden_change,
        "that is the gradient of sum(g(tanh(x))): the negative values of tanh(x) must still be "
        "set to 0, and where they are, the gradient is 0.": unrectified,
        "a gradient where x < 0 (it should be 0 there): what set the negative values to 0 was "
        "detached, so autograd does not differentiate it, and tanh's gradient still reaches x "
        "there (section 2).": leaky,
    }
    check_drawn_tensor(
        gradient,
        expected,
        "rectified_tanh_grad(x, g)",
        atol=atol,
        mistakes={text: value for text, value in mistakes.items() if value is not None},
        drawn="rectified_tanh_grad a function g" if drawn else None,
    )


def rectified_tanh_case(example) -> tuple[torch.Tensor, ...]:
    """rectified_tanh_grad's visible example (`example`: its Rectified, g(h) = fn(a h) at x),
    in float64: the right gradient, g'(h) (1 - h**2) with h = tanh(x) where x > 0 and 0 where
    x < 0, and the values of the slips check_rectified_tanh names: `hidden_change` (h set to 0
    unseen, so g'(0) (1 - 0**2) where x < 0), `unrectified` (g'(tanh x) (1 - tanh(x)**2)
    everywhere) and `leaky` (g'(0) (1 - tanh(x)**2) where x < 0). g' of the example's own g,
    written out: a / (1 + a u), a cos(a u) or a exp(a u)."""
    a = float(example.a)
    slope = {
        "log1p": lambda u: a / (1 + a * u),
        "sin": lambda u: a * torch.cos(a * u),
        "exp": lambda u: a * torch.exp(a * u),
    }[example.fn]
    x = torch.tensor(example.x, dtype=torch.float64)
    h = torch.tanh(x)
    positive = x > 0
    unrectified = slope(h) * (1 - h**2)
    at_zero = slope(torch.zeros_like(x))
    right = torch.where(positive, slope(h.clamp(min=0)) * (1 - h.clamp(min=0) ** 2), 0.0)
    return (
        right,
        torch.where(positive, right, at_zero),
        unrectified,
        torch.where(positive, right, at_zero * (1 - h**2)),
    )


# Exercise 4 · Save in lower precision


def _same(a, b) -> bool:
    """Whether two gradients agree to the last bits of float64."""
    return bool(torch.allclose(a.double(), b.double(), rtol=1e-12, atol=1e-14))


def check_grad_with_saved_as(
    result, x, expected, exact, unrestored, drawn=False, float32_back=None, other_dtype=None
) -> None:
    """Check grad_with_saved_as(f, x, dtype)'s result against `expected`; `exact`: the gradient
    with nothing packed; `unrestored`: the gradient when unpack hands the tensors back in dtype;
    `drawn`: f was drawn at random; `float32_back`: the gradient when unpack hands them back in
    float32 whatever their dtype (on float64 numbers, 1e-8 off: compared to the last bit);
    `other_dtype`: the gradient with the tensors stored in the other 16-bit dtype."""
    if isinstance(result, torch.Tensor) and result.dtype != x.dtype:
        raise CheckFailed(
            f"grad_with_saved_as returned a {result.dtype} gradient for a {x.dtype} x: only "
            "the saved tensors are stored in the lower precision; the forward pass runs in x's "
            "dtype, and the unpack hook gives each saved tensor back in the dtype it had "
            "(section 3)."
        )
    if (
        float32_back is not None
        and isinstance(result, torch.Tensor)
        and result.shape == expected.shape
        and not _same(result, expected)
        and _same(result, float32_back)
    ):
        raise CheckFailed(
            f"grad_with_saved_as(f, x, dtype) is wrong: on {x.dtype} numbers, backward() got the "
            f"saved tensors back in float32, not in the {x.dtype} they had before packing (section "
            "3)."
        )
    mistakes = {
        "that is the exact gradient: the saved tensors were kept in full precision. The "
        "hooks act only on what is saved while f runs inside them (section 3).": exact,
        "backward() got the saved tensors back in dtype, not in the dtype they had before "
        "packing (section 3).": unrestored,
        "the saved tensors were stored in another 16-bit dtype than the one asked for: "
        "grad_with_saved_as is handed its dtype (section 3).": other_dtype,
    }
    check_drawn_tensor(
        result,
        expected,
        "grad_with_saved_as(f, x, dtype)",
        atol=1e-6,
        mistakes={text: value for text, value in mistakes.items() if value is not None},
        drawn="grad_with_saved_as a function f" if drawn else None,
    )


def saved_as_case(example) -> tuple[torch.Tensor, ...]:
    """grad_with_saved_as' visible example (`example`: its Stored, f(t) = p(t) e^t with p = sin
    or cos, at float32 x, stored in bfloat16): the gradient backward() computes in float32 from
    the saved t, p(t) and e^t rounded to bfloat16 and back, p'(t) e^t + p(t) e^t (p' = cos, or
    -sin), and the values of the slips check_grad_with_saved_as names: `exact` (nothing
    rounded), `unrestored` (handed back in bfloat16, so p' is computed, and rounded, in bfloat16
    too) and `other_dtype` (rounded to float16). Only the example's own function, written out."""
    x = torch.tensor(example.x, dtype=torch.float32)

    def through(dtype):
        return (lambda v: v) if dtype is None else (lambda v: v.to(dtype).to(torch.float32))

    def gradient(stored, slope_in=None):
        kept = through(stored)
        t, p, e = kept(x), kept(getattr(x, example.p)()), kept(x.exp())
        slope = t.cos() if example.p == "sin" else -t.sin()
        if slope_in is not None:
            slope = through(slope_in)(slope)
        return e * slope + p * e

    return (
        gradient(torch.bfloat16),
        gradient(None),
        gradient(torch.bfloat16, slope_in=torch.bfloat16),
        gradient(torch.float16),
    )


# Exercise 5 · Checkpoint in segments


def check_segment_bytes(result, expected, wrong, text) -> None:
    """Check segment_checkpoint_bytes(blocks, x, k)'s result against `expected`; `wrong`: the
    number each typical mistake gives, by name ("plain": nothing checkpointed, "each": every
    block checkpointed alone)."""
    _check_count(
        result,
        expected,
        f"segment_checkpoint_bytes({text})",
        {
            "that is what the blocks save with no checkpointing at all (section 4).": wrong[
                "plain"
            ],
            "that is what checkpointing every block alone saves: a segment of k blocks is "
            "checkpointed as one, so only its first block's input is saved (section 4).": wrong[
                "each"
            ],
            "nothing was saved: with use_reentrant=True (or without use_reentrant), an input "
            "that does not require gradients gives an output that does not either, and the "
            "graph is cut (section 4).": 0,
        },
        advice=" Every segment of k blocks, the last one (which may hold fewer) too, runs "
        "through checkpoint as one, while the hook counts (section 4).",
    )
