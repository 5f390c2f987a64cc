"""Lesson 8 (the gradient of a square), added by tests/commands/test_new_lesson.py: what the
grader observes of each answer."""

from grader.probing import by_hand

# The derivative asked for by hand, read as a formula the grader evaluates at points it draws.
BY_HAND = {
    "test_square_grad_by_hand": {
        "square_grad_by_hand": [{"low": -2.0, "high": 2.0, "shapes": [[4], [2, 3]]}]
    }
}
# The answers the wording asks to take from autograd, for the grading process's reading.
HOW = {
    "test_sum_grad": {"sum_grad": ["using autograd"]},
    "test_mean_grad": {"mean_grad": ["using autograd"]},
}


def _inputs(draw):
    """A vector and a matrix of drawn sizes and values."""
    return [draw.tensor(draw.integer(2, 6)), draw.tensor(draw.integer(2, 3), draw.integer(2, 4))]


def test_sum_grad(student, observe, draw):
    for x in _inputs(draw):
        f = draw.function()  # drawn at grading time: only autograd gives its gradient
        shape = tuple(x.shape)
        observe(f"sum_grad(f, x) for a drawn f and x of shape {shape}", student.sum_grad(f, x))


def test_square_grad_by_hand(student, observe, draw):
    for x in _inputs(draw):
        result = by_hand(student.square_grad_by_hand, x)
        observe(f"square_grad_by_hand(x) for x of shape {tuple(x.shape)}", result)


def test_mean_grad(student, observe, draw):
    for x in _inputs(draw):
        f = draw.function()
        shape = tuple(x.shape)
        observe(f"mean_grad(f, x) for a drawn f and x of shape {shape}", student.mean_grad(f, x))
