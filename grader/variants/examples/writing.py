"""How the examples write their numbers and formulas, and tell their answers apart."""


def number(value: float) -> str:
    """A coefficient or coordinate as the lesson writes it: 2, -1, 0.5."""
    return f"{value + 0.0:g}"


def numbers(values) -> str:
    """A list of numbers as the lesson writes it: [2, -1, 0.5]."""
    return "[" + ", ".join(number(v) for v in values) + "]"


def rounded(values, places: int = 4) -> str:
    """A list of results, rounded: [0.8, -2]."""
    return numbers(round(v, places) + 0.0 for v in values)


def times(coefficient: float, term: str) -> str:
    """`coefficient * term`, without a factor 1."""
    return term if coefficient == 1 else f"{number(coefficient)} * {term}"


def minus(name: str, shift: float) -> str:
    """`name - shift` as the lesson writes it: x - 1, x + 0.5."""
    return f"{name} - {number(shift)}" if shift > 0 else f"{name} + {number(-shift)}"


def fixed(value: float) -> str:
    """A number to six decimals, without trailing zeros: 3.000001, 12."""
    return f"{value:.6f}".rstrip("0").rstrip(".")


def far_apart(*values, by: float = 1e-2) -> bool:
    """Whether every two of `values` (lists of numbers) differ somewhere by more than `by`."""
    return all(
        max(abs(p - q) for p, q in zip(one, other, strict=True)) > by
        for i, one in enumerate(values)
        for other in values[i + 1 :]
    )
