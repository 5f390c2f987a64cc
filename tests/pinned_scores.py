"""The example class's expected scores: (lesson, student) -> score. Changing one needs a reason
(the last change: the curriculum's third pass reworked exercises in every lesson and added
lesson 3's unbroadcast (3 points) and lesson 7's safe_norm and per_sample_grads (2 each); the
students who answered a reworked exercise carry the new solution, bob a typical mistake from the
wrong-answer corpus, so alice and erin gain the new points, bob's reworked lesson-4 answers earn
2 fewer, and erin's lesson-6 slip was in a reworked exercise; lesson 8 is new, pinned as the
fast engine grades it: dave answers its prediction and first graded exercise, erin slips on
per_sample_grads).

alice is complete and right, bob makes the typical mistakes, carol hands in the untouched
notebook, dave answers the first exercises only, erin is late with one slip, frank hard-codes.
"""

_SCORES = {
    "01_tensors_and_requires_grad": dict(alice=6, bob=0, carol=0, dave=2, erin=4, frank=0),
    "02_grad_fn_and_the_graph": dict(alice=9, bob=2, carol=0, dave=2, erin=7, frank=0),
    "03_backward_and_scalar_outputs": dict(alice=12, bob=2, carol=0, dave=4, erin=10, frank=0),
    "04_retain_graph_and_accumulation": dict(alice=15, bob=3, carol=0, dave=5, erin=15, frank=0),
    "05_gradients_at_work": dict(alice=11, bob=2, carol=0, dave=7, erin=8, frank=0),
    "06_backward_by_hand": dict(alice=13, bob=0, carol=0, dave=4, erin=13, frank=0),
    "07_stopping_and_shaping_gradients": dict(alice=18, bob=0, carol=0, dave=5, erin=16, frank=0),
    "08_forward_mode_and_hessians": dict(alice=11, bob=0, carol=0, dave=3, erin=9, frank=0),
}
PINNED = {
    (lesson, student): score
    for lesson, scores in _SCORES.items()
    for student, score in scores.items()
}
