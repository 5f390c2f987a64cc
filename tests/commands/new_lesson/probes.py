"""Lesson 8 (the gradient of a square), added by tests/commands/test_new_lesson.py: what the
grader observes of each answer."""

from grader.probing import autograd_called, by_hand

# The derivative asked for by hand, read as a formula the grader evaluates at points it draws.
BY_HAND = {
    "test_square_grad_by_hand": {
        "square_grad_by_hand": [{"low": -2.0, "high": 2.0, "shapes": [[4], [2, 3]]}]
    }
}
# The answers the wording asks to take from autograd, for the grading process's reading.
HOW = {
    "test_square_grad": {"square_grad": ["using autograd"]},
    "test_mean_square_grad": {"mean_square_grad": ["using autograd"]},
}


def _inputs(draw):
    """A vector and a matrix of drawn sizes and values."""
    return [draw.tensor(draw.integer(2, 6)), draw.tensor(draw.integer(2, 3), draw.integer(2, 4))]


def test_square_grad(student, observe, draw):
    for x in _inputs(draw):
        result, used = autograd_called(student.square_grad, x)
        observe(f"square_grad(x) for x of shape {tuple(x.shape)}", result)
        observe("square_grad called autograd", used)


def test_square_grad_by_hand(student, observe, draw):
    for x in _inputs(draw):
        result = by_hand(student.square_grad_by_hand, x)
        observe(f"square_grad_by_hand(x) for x of shape {tuple(x.shape)}", result)


def test_mean_square_grad(student, observe, draw):
    for x in _inputs(draw):
        result, used = autograd_called(student.mean_square_grad, x)
        observe(f"mean_square_grad(x) for x of shape {tuple(x.shape)}", result)
        observe("mean_square_grad called autograd", used)
