"""The example class's expected scores: (lesson, student) -> score. Changing one needs a reason.

alice is complete and right, bob makes the typical mistakes, carol hands in the untouched
notebook, dave answers the first exercises only, erin is late with one slip, frank hard-codes.
"""

_SCORES = {
    "01_tensors_and_requires_grad": dict(alice=8, bob=0, carol=0, dave=4, erin=6, frank=0),
    "02_grad_fn_and_the_graph": dict(alice=11, bob=2, carol=0, dave=4, erin=9, frank=2),
    "03_backward_and_scalar_outputs": dict(alice=11, bob=2, carol=0, dave=4, erin=9, frank=2),
    "04_retain_graph_and_accumulation": dict(alice=17, bob=5, carol=0, dave=7, erin=15, frank=2),
    "05_gradients_at_work": dict(alice=13, bob=4, carol=0, dave=7, erin=10, frank=0),
    "06_backward_by_hand": dict(alice=15, bob=0, carol=0, dave=6, erin=13, frank=0),
    "07_stopping_and_shaping_gradients": dict(alice=18, bob=0, carol=0, dave=9, erin=16, frank=0),
}
PINNED = {
    (lesson, student): score
    for lesson, scores in _SCORES.items()
    for student, score in scores.items()
}
