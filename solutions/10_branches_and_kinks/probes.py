"""Lesson 10 (branches and kinks): what the grader observes of each answer."""

import torch

from grader.probing import by_hand, number

# Derivatives asked for by hand: each answer is read as a formula that the grader evaluates itself,
# at points drawn for the submission (grader.judging.by_hand). {test: {function: parameter domains}}
BY_HAND = {"test_branch_derivative": {"df_branch": [{"low": -2.5, "high": 2.5, "avoid": [0.5]}]}}

# How the exercises ask their answers to be worked out, read from the answers' code in the grading
# process (grader.judging.how): {test: {function: [rule, ...]}}. The reading only flags answers for
# the instructor: the exercises make their rules inevitable (the README's rules, rule by rule).
HOW = {"test_unit_rows": {"unit_rows": ["differentiated as written"]}}


def test_branch_derivative(student, observe, draw):
    points = [1.0, 0.0, 0.5]
    points += [draw.number(0.51, 2.5) for _ in range(3)]
    points += [draw.number(-2.5, 0.5) for _ in range(3)]
    for x in points:
        observe(f"df_branch({x})", number(by_hand(student.df_branch, x)), atol=1e-4)


def test_rule_slope(student, observe, draw):
    # Every kind of corner: convex and concave, slopes of one sign (both orders, both signs),
    # of opposite signs, one slope 0, and no corner at all (equal slopes).
    a, b = sorted(draw.number(0.1, 3.0, digits=2) for _ in range(2))
    b = b if b > a else a + 0.5
    c = draw.number(-3.0, -0.1, digits=2)
    corners = [(a, b), (b, a), (-a, -b), (-b, -a), (c, b), (b, c), (0.0, c), (a, 0.0), (c, c)]
    corners += [(draw.number(-3.0, 3.0, 2), draw.number(-3.0, 3.0, 2)) for _ in range(4)]
    for left, right in corners:
        observe(f"rule_slope({left}, {right})", number(student.rule_slope(left, right)))


def test_ramp(student, observe, draw):
    # Exact corners, points just beside them, and points drawn anywhere from -1 to 2.
    rows, columns = draw.integer(2, 4), draw.integer(4, 6)
    x = draw.tensor(rows, columns, low=-1.0, high=2.0)
    places = sorted(range(rows * columns), key=lambda _: draw.chance())
    corners = [0.0, 1.0, 0.0, 1.0, -1e-3, 1e-3, 1 - 1e-3, 1 + 1e-3]
    flat = x.view(-1)
    for place, value in zip(places, corners, strict=False):
        flat[place] = value
    x.requires_grad_()
    result = student.ramp(x)
    observe("ramp(x)", result)
    observe("ramp(x) is tracked", bool(result.requires_grad))
    if result.requires_grad:
        weights = draw.tensor(rows, columns, low=0.5, high=1.5)
        (gradient,) = torch.autograd.grad(result, x, weights)
        observe("its gradient", gradient)
    point = torch.tensor(draw.choice([0.0, 1.0, 0.5]), requires_grad=True)  # any shape: 0-d
    result = student.ramp(point)
    observe("ramp of a 0-d tensor", result)
    if isinstance(result, torch.Tensor) and result.requires_grad:
        observe("the gradient at that 0-d point", torch.autograd.grad(result, point)[0])


def test_unit_rows(student, observe, draw):
    n, d = draw.integer(6, 8), draw.integer(2, 4)
    v = draw.tensor(n, d)
    zero_rows = sorted({draw.integer(0, n - 1) for _ in range(2)})
    others = [i for i in range(n) if i not in zero_rows]
    # Rows near the bad point, lengths from 1e-9 to 1e-8 and from 0.001 to 0.01: a small number
    # added to the length, or a lower bound on it above 1e-9, changes the first one's direction.
    short_rows = others[:2]
    lengths = [draw.number(1.0, 10.0) * 1e-9, draw.number(0.001, 0.01, digits=4)]
    for i in zero_rows:
        v[i] = 0.0
    for i, length in zip(short_rows, lengths, strict=True):
        v[i] = v[i] / v[i].norm() * length
    v[others[2], draw.integer(0, d - 1)] = 0.0  # one coordinate 0: no bad point at all
    v.requires_grad_()
    directions = student.unit_rows(v)
    observe("unit_rows(v)", directions)
    observe("unit_rows(v) is tracked", bool(directions.requires_grad))
    if directions.requires_grad:
        weights = draw.tensor(n, d, low=-1.0, high=1.0)
        (gradient,) = torch.autograd.grad(directions, v, weights, create_graph=True)
        # About 1 / length on a short row (up to 1e9), where float32 rounding alone errs by
        # about 1e-7 / length: each row shorter than 1 is compared times its length.
        lengths = v.detach().norm(dim=1, keepdim=True)
        scale = torch.where(lengths > 0, lengths.clamp(max=1.0), 1.0)
        observe("its gradient, each short row times its length", gradient * scale, atol=1e-4)
        # How the gradient changes along a direction, on rows of ordinary length: 0 for a
        # gradient typed in by hand (v times a constant), not for the direction as written.
        direction, rows = draw.tensor(n, d), others[2:]
        curvature = torch.zeros_like(v)
        if gradient.requires_grad:
            (curvature,) = torch.autograd.grad((gradient * direction).sum(), v, allow_unused=True)
        curvature = torch.zeros_like(v) if curvature is None else curvature
        observe(
            "how its gradient changes along a direction, rows of ordinary length",
            curvature[rows],
            atol=1e-4,
        )
