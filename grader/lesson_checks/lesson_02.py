"""Lesson 2's visible checks: `build_graph`, `leaves_of`, `graph_depth` and `sigmoid_loss`.

Each function calls the student's function on the example its test cell writes out and compares
the result with the values the cell passes in; `leaves_case` and `depth_cases` build the graphs of
a student's own examples (`grader.variants.examples.lesson_02`) and the values to pass.
"""

import torch

from grader.checks import CheckFailed, call, check_grad, check_grad_fn, check_tensor, require


def check_build_graph(build_graph, w, right, summed, w_squared, wanted) -> None:
    """Check build_graph(w)'s value and that its graph, read back to w, is the path `wanted`."""
    result = call(build_graph, w, name="build_graph")
    check_tensor(
        result,
        right,
        "build_graph(w)",
        atol=1e-4,
        mistakes={
            "you took the sum; the exercise asks for the mean.": summed,
            "you squared w alone; square 5 * w.": w_squared,
        },
    )
    check_grad_fn(result, wanted[0], "build_graph(w)")
    nodes, node = [], result.grad_fn
    while node is not None and len(nodes) < 10:
        nodes.append(node)
        node = next((n for n, _ in node.next_functions if n is not None), None)
    path = [type(node).__name__ for node in nodes]
    require(
        path == list(wanted),
        f"Read back from build_graph(w), the graph is {' <- '.join(path)}, but the exercise "
        f"asks for {' <- '.join(wanted)}: multiply w by 5, square that with ** 2, take the mean.",
    )
    require(
        nodes[-1].variable is w,
        "The graph of build_graph(w) ends at another leaf, not at w: compute from the w you are "
        "given, without copying it into a new tensor.",
    )


def _binary(operator: str, left, right):
    return {"*": torch.mul, "+": torch.add, "-": torch.sub}[operator](left, right)


def _chained(tensor, ops):
    for op in ops:
        tensor = getattr(tensor, op)()
    return tensor


def leaves_case(examples, a, b) -> tuple[torch.Tensor, dict, str]:
    """The visible case of leaves_of for a student's `examples` (lesson 2's SharedLeaf): c built
    from the leaves `a` and `b`, the leaves it must return (name: leaf), and how the test names
    the call (for check_leaves_of)."""
    again = {"a": a, "b": b}[examples.again]
    c = _binary(examples.second, _binary(examples.first, a, b), _chained(again, examples.chain))
    return c, {"a": a, "b": b}, f"leaves_of({examples.formula})"


def depth_cases(examples, a, b) -> tuple[dict, dict]:
    """The visible cases of graph_depth for a student's `examples` (lesson 2's DepthChains),
    built from the leaves `a` and `b`: the branch and the shared node, each as the arguments of
    check_graph_depth (the tensor, its depth, the length of its shortest path, how the test names
    the call, and what a walk that counts a node only the first time it reaches it finds)."""
    branch = a * _chained(b, examples.branch) + a
    h = getattr(a, examples.inner)()
    shared = h + _chained(h, examples.chain)
    return (
        {
            "tensor": branch,
            "expected": examples.branch_depth,
            "shortest": examples.branch_shortest,
            "shown": f"graph_depth({examples.branch_formula})",
        },
        {
            "tensor": shared,
            "expected": examples.shared_depth,
            "shortest": examples.shared_shortest,
            "shown": f"graph_depth({examples.shared_formula})",
            "first_visit": examples.shared_first_visit,
        },
    )


def check_leaves_of(leaves_of, tensor, expected, shown) -> None:
    """Check leaves_of(tensor) lists each leaf of `expected` (name: leaf) once, and no other."""
    found = call(leaves_of, tensor, name="leaves_of")
    require(
        isinstance(found, list | tuple),
        f"{shown} should return a list of tensors, but it returned a {type(found).__name__}.",
    )
    for item in found:
        if type(item).__name__ == "AccumulateGrad":
            raise CheckFailed(
                f"{shown} returns AccumulateGrad nodes: return the tensors they hold, "
                "node.variable."
            )
        require(
            isinstance(item, torch.Tensor),
            f"{shown} should return tensors, but it contains a {type(item).__name__}.",
        )
    ids = [id(item) for item in found]
    require(
        len(set(ids)) == len(ids),
        f"{shown} lists a leaf more than once: a leaf reached by two paths is still one leaf. "
        "Remember which nodes you have already visited.",
    )
    missing = [name for name, leaf in expected.items() if id(leaf) not in ids]
    require(
        not missing,
        f"{shown} misses {', '.join(missing)}: follow every entry of next_functions "
        "(skipping None), not only the first.",
    )
    require(
        len(found) == len(expected),
        f"{shown} returns tensors that are not leaves of this graph: return only what the "
        "AccumulateGrad nodes hold (node.variable).",
    )


def check_graph_depth(graph_depth, tensor, expected, shortest, shown, first_visit=None) -> None:
    """Check graph_depth(tensor) is `expected`, naming the slip (`shortest`, `first_visit`)."""
    found = call(graph_depth, tensor, name="graph_depth")
    require(
        isinstance(found, int) and not isinstance(found, bool),
        f"{shown} should be a whole number, but it is {found!r}.",
    )
    without_leaf_node = expected - 1  # the longest path without its AccumulateGrad node
    if found == first_visit != expected:
        hint = (
            f"{found} is what you get when a node counts only the first time your walk reaches "
            "it. A node that several paths share belongs to each of them: measure every path in "
            "full (remember the depth you found for a node and use it again, instead of skipping "
            "the node as already visited)."
        )
    elif found == shortest < expected and found == without_leaf_node:
        hint = (
            f"{found} is the length of the shortest path, and also of the longest path without "
            "its AccumulateGrad node: keep the longest path (a max over the branches, not a "
            "min), and count the AccumulateGrad node at its end too."
        )
    elif found == shortest < expected:
        hint = (
            f"{found} is the length of the shortest path: keep the longest one, a max over the "
            "branches, not a min."
        )
    elif found == without_leaf_node:
        hint = "Count the AccumulateGrad node at the end of the path too."
    elif found == expected + 1:
        hint = "The leaf tensor is not a node: the path ends at its AccumulateGrad."
    elif found < expected:
        hint = (
            "A longer path exists: look at every entry of next_functions, not only the first, "
            "and count a node on every path that reaches it, even one you have met before."
        )
    else:
        hint = "Keep the longest single path (a max over the branches), do not add them up."
    require(
        found == expected, f"{shown} is {found}, but the longest path has {expected} nodes. {hint}"
    )


def check_sigmoid_loss(sigmoid_loss, w, before, right_loss, right_grad, through_data) -> None:
    """Check sigmoid_loss(w) leaves w as `before`, gives `right_loss`, and w.grad `right_grad`."""
    shown = f"sigmoid_loss({w})"
    loss = call(sigmoid_loss, w, name="sigmoid_loss")
    require(
        torch.equal(w.detach(), torch.as_tensor(before, dtype=w.dtype)) and w.is_leaf,
        f"{shown} changed the w it was given (now {w.detach()}): the caller still needs w as "
        "it was, and an in-place change reaches the caller's tensor (section 9).",
    )
    check_tensor(loss, right_loss, f"loss = {shown}", atol=1e-5)
    require(
        loss.requires_grad,
        f"loss = {shown} does not require gradients, so backward() cannot reach w: do not "
        "take the computation out of the graph (.detach(), torch.no_grad()).",
    )
    try:
        loss.backward()
    except RuntimeError as error:
        raise CheckFailed(
            f"loss.backward() raised RuntimeError: {error} Your function changes in place a "
            "tensor that autograd saved for the backward pass (sigmoid keeps its output), and "
            "backward() needs it as it was (section 9 and lesson 1, section 7)."
        ) from None
    check_grad(
        w,
        right_grad,
        f"w (after loss.backward(), loss = {shown})",
        atol=1e-5,
        mistakes={
            "autograd used a sigmoid output that was changed behind its back (through .data), "
            "so its backward formula got the wrong numbers: it needs that output as it was "
            "(section 9 and lesson 1, section 7).": through_data,
        },
    )
