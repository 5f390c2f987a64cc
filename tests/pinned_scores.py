"""The example class's expected scores: (lesson, student) -> score. Changing one needs a reason.

alice is complete and right, bob makes the typical mistakes, carol hands in the untouched
notebook, dave answers the first exercises only, erin is late with one slip, frank hard-codes.
"""

_SCORES = {
    "01_tensors_and_requires_grad": dict(alice=7, bob=1, carol=0, dave=4, erin=5, frank=2),
    "02_grad_fn_and_the_graph": dict(alice=10, bob=3, carol=0, dave=4, erin=9, frank=2),
    "03_backward_and_scalar_outputs": dict(alice=10, bob=3, carol=0, dave=4, erin=7, frank=2),
    "04_retain_graph_and_accumulation": dict(alice=13, bob=6, carol=0, dave=6, erin=11, frank=2),
    "05_gradients_at_work": dict(alice=13, bob=6, carol=0, dave=7, erin=11, frank=2),
}
PINNED = {
    (lesson, student): score
    for lesson, scores in _SCORES.items()
    for student, score in scores.items()
}
