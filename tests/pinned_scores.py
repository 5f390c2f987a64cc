"""The example class's expected scores: (lesson, student) -> score. Changing one needs a reason
(the last change: the curriculum's fourth pass. Lesson 7 was split: its in-place, branch, kink and
torch.func exercises moved to new lessons 9, 10 and 8, so alice and erin (whose slip moved with
its exercise) keep 10 of its points. Lessons 8 to 11 are new, pinned as the fast engine grades
them: dave answers their first exercises, erin slips once in each (per_sample_grads, the
rectification in rectified_tanh_grad, df_branch, a step short in descend). Lesson 3's dz_dx and
weighted_grads, lesson 4's hidden_gradient and lesson 5's gradient_descent became transfer
tasks: bob, who had dz_dx right, now keeps section 6's inner factor 2, 2 points fewer).

alice is complete and right, bob makes the typical mistakes, carol hands in the untouched
notebook, dave answers the first exercises only, erin is late with one slip, frank hard-codes.
"""

_SCORES = {
    "01_tensors_and_requires_grad": dict(alice=6, bob=0, carol=0, dave=2, erin=4, frank=0),
    "02_grad_fn_and_the_graph": dict(alice=9, bob=2, carol=0, dave=2, erin=7, frank=0),
    "03_backward_and_scalar_outputs": dict(alice=12, bob=0, carol=0, dave=4, erin=10, frank=0),
    "04_retain_graph_and_accumulation": dict(alice=15, bob=3, carol=0, dave=5, erin=15, frank=0),
    "05_gradients_at_work": dict(alice=11, bob=2, carol=0, dave=7, erin=8, frank=0),
    "06_backward_by_hand": dict(alice=13, bob=0, carol=0, dave=4, erin=13, frank=0),
    "07_stopping_and_shaping_gradients": dict(alice=10, bob=0, carol=0, dave=5, erin=10, frank=0),
    "08_forward_mode_and_hessians": dict(alice=11, bob=0, carol=0, dave=3, erin=9, frank=0),
    "09_saved_tensors_and_memory": dict(alice=11, bob=0, carol=0, dave=3, erin=9, frank=0),
    "10_branches_and_kinks": dict(alice=9, bob=0, carol=0, dave=4, erin=7, frank=0),
    "11_an_engine_of_your_own": dict(alice=13, bob=0, carol=0, dave=5, erin=11, frank=0),
}
PINNED = {
    (lesson, student): score
    for lesson, scores in _SCORES.items()
    for student, score in scores.items()
}
