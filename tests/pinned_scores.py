"""The example class's expected scores: (lesson, student) -> score. Changing one needs a reason
(the last change: predictions are no longer graded, so each student lost the points of the
predictions they had right).

alice is complete and right, bob makes the typical mistakes, carol hands in the untouched
notebook, dave answers the first exercises only, erin is late with one slip, frank hard-codes.
"""

_SCORES = {
    "01_tensors_and_requires_grad": dict(alice=6, bob=0, carol=0, dave=2, erin=4, frank=0),
    "02_grad_fn_and_the_graph": dict(alice=9, bob=2, carol=0, dave=2, erin=7, frank=0),
    "03_backward_and_scalar_outputs": dict(alice=9, bob=2, carol=0, dave=4, erin=7, frank=0),
    "04_retain_graph_and_accumulation": dict(alice=15, bob=5, carol=0, dave=5, erin=15, frank=0),
    "05_gradients_at_work": dict(alice=11, bob=2, carol=0, dave=7, erin=8, frank=0),
    "06_backward_by_hand": dict(alice=13, bob=0, carol=0, dave=4, erin=11, frank=0),
    "07_stopping_and_shaping_gradients": dict(alice=14, bob=0, carol=0, dave=5, erin=12, frank=0),
}
PINNED = {
    (lesson, student): score
    for lesson, scores in _SCORES.items()
    for student, score in scores.items()
}
