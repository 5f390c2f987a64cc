"""Lesson 9's visible examples of each student's own: the function and the input saved_bytes,
rectified_tanh_grad and grad_with_saved_as are tried on."""

import itertools
import math
from dataclasses import dataclass

from grader.variants.examples.base import Example
from grader.variants.examples.writing import number, rounded


def tensor(values, dtype: str = "float32") -> str:
    """`torch.tensor([...])` as the lesson writes it, with its dtype when not float32."""
    shown = ", ".join(f"{v:g}." if float(v).is_integer() else f"{v:g}" for v in values)
    extra = "" if dtype == "float32" else f", dtype=torch.{dtype}"
    return f"torch.tensor([{shown}]{extra})"


# Exercise 2 · How many bytes a graph saves

SAVES_OUTPUT = ("tanh", "sigmoid", "exp")  # their nodes save their result v
SAVES_INPUT = ("sin", "cos")  # theirs save their input t


@dataclass(frozen=True)
class Saving:
    """saved_bytes' example: f(t) = v * v * t with v = act(t), an elementwise function whose node
    saves one tensor (its input or its output), on x of n numbers in float32 or float64. Its graph
    saves 5 tensors in 3 storages (v, v * v and t) of n numbers each."""

    act: str
    x: tuple[float, ...]
    dtype: str = "float32"
    saves = 5
    storages = 3

    @property
    def formula(self) -> str:
        return f"v = torch.{self.act}(t); v * v * t"

    def f(self, t):
        v = getattr(t, self.act)()
        return v * v * t

    @property
    def element_size(self) -> int:
        return {"float32": 4, "float64": 8}[self.dtype]


class SavedBytes(Example):
    """Lesson 9, exercise 2: saved_bytes(f, x), for f(t) = v * v * t with v = act(t)."""

    lesson = "09_saved_tensors_and_memory"
    exercise = answer_cell = "saved_bytes"
    what = "example"
    points = (0.5, -1.0, 2.0, -1.5, 1.0, -0.5, 1.5, -2.0)
    default = Saving(act="tanh", x=points[:3])
    lengths = range(3, 9)
    shifts = (-0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75)

    def every(self) -> list[Saving]:
        return [
            Saving(act, tuple(v + shift for v in self.points[:n]), dtype)
            for act, n, dtype, shift in itertools.product(
                SAVES_OUTPUT + SAVES_INPUT, self.lengths, ("float32", "float64"), self.shifts
            )
        ]

    def shown(self, examples: Saving, plain: bool = False) -> str:
        n, size, act = len(examples.x), examples.element_size, examples.act
        which = "its output v" if act in SAVES_OUTPUT else "its input t"
        said = (
            f"`f` computes `{examples.formula}`, on `x = {tensor(examples.x, examples.dtype)}`. "
            f"`{act}` saves {which}, `v * v` saves v twice, and `(v * v) * t` saves `v * v` and "
            f"t: {examples.saves} saves, but {examples.storages} storages of {n} "
            f"{examples.dtype} numbers, {n * size} bytes each: "
            f"{examples.storages * n * size} bytes (each save counted: "
            f"{examples.saves * n * size} bytes; {examples.storages * n} numbers)."
        )
        return said.replace("`", "") if plain else said


# Exercise 3 · Fix the in-place bug

# g'(u) of g(u) = fn(a u), written out
SLOPES = {
    "log1p": lambda a, u: a / (1 + a * u),
    "sin": lambda a, u: a * math.cos(a * u),
    "exp": lambda a, u: a * math.exp(a * u),
}


@dataclass(frozen=True)
class Rectified:
    """rectified_tanh_grad's example: g(h) = fn(a h), fn one of log1p, sin, exp, at x of three
    numbers, one negative (where the gradient is 0) and two positive."""

    fn: str
    a: float
    x: tuple[float, float, float]

    @property
    def formula(self) -> str:
        if self.a == 1:
            return f"torch.{self.fn}"
        return f"lambda h: torch.{self.fn}({number(self.a)} * h)"

    def g(self, h):
        return getattr(h if self.a == 1 else self.a * h, self.fn)()

    def slope(self, u: float) -> float:
        """g'(u), by the formula."""
        return SLOPES[self.fn](self.a, u)

    @property
    def gradient(self) -> tuple[float, ...]:
        """The right gradient: g'(h) (1 - h**2) with h = tanh(x) where x > 0, 0 where x < 0."""
        return tuple(
            self.slope(math.tanh(v)) * (1 - math.tanh(v) ** 2) if v > 0 else 0.0 for v in self.x
        )


class RectifiedTanh(Example):
    """Lesson 9, exercise 3: rectified_tanh_grad(x, g), for g(h) = fn(a h)."""

    lesson = "09_saved_tensors_and_memory"
    exercise = "rectified_tanh_grad"
    answer_cell = "fix_inplace"
    what = "example"
    default = Rectified(fn="log1p", a=1.0, x=(-1.0, 0.5, 2.0))
    coefficients = (0.5, 1.0, 2.0)
    negatives = (-1.5, -1.0, -0.5)
    positives = (0.25, 0.5, 1.0, 1.5, 2.0)

    def every(self) -> list[Rectified]:
        """log1p(a h) is defined for a tanh(x) > -1 only: its examples keep 1 + a tanh(x) above
        0.2."""
        found = []
        for fn, a, negative, pair, where in itertools.product(
            SLOPES,
            self.coefficients,
            self.negatives,
            itertools.combinations(self.positives, 2),
            range(3),
        ):
            if fn == "log1p" and 1 + a * math.tanh(negative) < 0.2:
                continue
            x = list(pair)
            x.insert(where, negative)
            found.append(Rectified(fn, a, tuple(x)))
        return found

    def shown(self, examples: Rectified, plain: bool = False) -> str:
        said = (
            f"`g = {examples.formula}`, at `x = {tensor(examples.x)}`. Where x > 0 the gradient "
            "is g′(h) (1 - h²), with h = tanh(x), and where x < 0 it is 0: here, rounded, "
            f"`{rounded(examples.gradient)}`."
        )
        return said.replace("`", "") if plain else said


# Exercise 4 · Save in lower precision


@dataclass(frozen=True)
class Stored:
    """grad_with_saved_as' example: f(t) = p(t) e^t, p = sin or cos, at three float32 numbers
    (multiples of 1/4, none 0), its saved tensors stored in bfloat16. Its graph saves t (for p),
    e^t (for exp) and both factors (for the product)."""

    p: str
    x: tuple[float, float, float]
    stored = "bfloat16"

    @property
    def formula(self) -> str:
        return f"lambda t: torch.{self.p}(t) * torch.exp(t)"

    def f(self, t):
        return getattr(t, self.p)() * t.exp()

    def gradients(self, stored: str | None = "bfloat16"):
        """The gradient in float32, with t, p(t) and e^t rounded to `stored` (None: exact), as
        backward() computes it from them: p'(t) e^t + p(t) e^t, p' = cos or -sin."""
        import torch

        t = torch.tensor(self.x, dtype=torch.float32)

        def kept(v):
            return v if stored is None else v.to(getattr(torch, stored)).to(torch.float32)

        t_, p_, e_ = kept(t), kept(getattr(t, self.p)()), kept(t.exp())
        slope = t_.cos() if self.p == "sin" else -t_.sin()
        return e_ * slope + p_ * e_


class GradWithSavedAs(Example):
    """Lesson 9, exercise 4: grad_with_saved_as(f, x, torch.bfloat16), for f(t) = p(t) e^t."""

    lesson = "09_saved_tensors_and_memory"
    exercise = answer_cell = "grad_with_saved_as"
    what = "example"
    default = Stored(p="sin", x=(0.5, 1.0, 2.0))
    coordinates = tuple(v / 4 for v in range(-8, 9) if v)

    def every(self) -> list[Stored]:
        return [
            Stored(p, x)
            for p, x in itertools.product(
                ("sin", "cos"), itertools.combinations(self.coordinates, 3)
            )
        ]

    def shown(self, examples: Stored, plain: bool = False) -> str:
        p = examples.p
        exact = "(cos t + sin t) e^t" if p == "sin" else "(cos t - sin t) e^t"
        said = (
            f"`f = {examples.formula}` on `x = {tensor(examples.x)}`, with the saved tensors "
            f"stored in bfloat16. The exact gradient is {exact} = "
            f"`{rounded(examples.gradients(None).tolist())}`; with t, {p}(t) and e^t saved in "
            "bfloat16 it comes out a little off, from the rounded values: "
            f"`{rounded(examples.gradients().tolist())}`."
        )
        return said.replace("`", "") if plain else said


EXAMPLES: tuple[Example, ...] = (SavedBytes(), RectifiedTanh(), GradWithSavedAs())
