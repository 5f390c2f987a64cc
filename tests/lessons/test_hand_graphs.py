"""Lesson 6's hand graphs: a walk that calls the nodes in the order handed over gets the true
gradients, and torch's engine, however it is started, is refused by the grading process."""

import pytest
import torch

from grader.function_oracle import FunctionOracle
from grader.hand_graphs import ORDER, hand_graph_truth
from grader.remote_functions import RemoteFunctions


def _hand_graph(key: str, runs: int = 1):
    """A hand graph served from `key`, and the oracle's own record of it."""
    oracle = FunctionOracle(key)
    graph = RemoteFunctions(oracle.answer).graph("t", 0, leaves=3, size=3, steps=6, runs=runs)
    return graph, oracle.graphs[0]


def _walk(output, order, upto=None):
    """Lesson 6's solution: the nodes called in `order`, gradients summed per output index;
    the gradient reaching `upto`'s node, where given."""
    received = {output.grad_fn: {0: torch.ones_like(output)}}
    with torch.no_grad():
        for node in order:
            grads = received.pop(node)
            if upto is not None and node is upto.grad_fn:
                return grads[upto.output_nr]
            results = node(*[grads.get(i) for i in range(max(grads) + 1)])
            results = (results,) if isinstance(results, torch.Tensor) else results
            for (child, index), grad in zip(node.next_functions, results, strict=True):
                if child is not None and grad is not None:
                    kept = received.setdefault(child, {})
                    kept[index] = kept[index] + grad if index in kept else grad
    return None


def test_a_walk_in_the_order_handed_over_gets_the_true_gradients():
    """Over 40 keys, the leaves' gradients and the gradient reaching every intermediate, from
    walks in the order handed over, are the gradients of the graph with its steps' functions."""
    for seed in range(40):
        graph, record = _hand_graph(f"key{seed}", runs=16)
        _walk(graph.output, graph.order)
        truth = hand_graph_truth(record)
        truth.output.backward(retain_graph=True)
        for walked, true in zip(graph.leaves, truth.leaves, strict=True):
            assert torch.allclose(walked.grad, true.grad, atol=1e-5), seed
        for made, true in zip(graph.intermediates, truth.intermediates, strict=True):
            reached = _walk(graph.output, graph.order, upto=made)
            (wanted,) = torch.autograd.grad(truth.output, true, retain_graph=True)
            assert torch.allclose(reached, wanted, atol=1e-5), seed


ENGINE_RUNS = {
    "backward()": lambda g: g.output.backward(),
    "torch.autograd.grad to the leaves": lambda g: torch.autograd.grad(g.output, g.leaves),
    "two runs from different gradients": lambda g: [
        torch.autograd.grad(g.output, g.leaves, k * torch.ones(()), retain_graph=True)
        for k in (1.0, 2.0)
    ],
    "the first node by hand, then the engine": lambda g: torch.autograd.backward(
        torch.autograd.graph.GradientEdge(g.output.grad_fn.next_functions[0][0], 0),
        g.output.grad_fn(torch.ones(())),
    ),
}


@pytest.mark.parametrize("run", ENGINE_RUNS.values(), ids=ENGINE_RUNS.keys())
def test_the_engine_is_refused_whichever_way_it_is_started(run):
    """Over 100 keys: backward(), torch.autograd.grad (to the leaves, or to any intermediate,
    which the engine reaches through the two twin steps) and the engine started below the first
    node all call two steps out of the order handed over, and the grading process refuses."""
    for seed in range(100):
        graph, _ = _hand_graph(f"key{seed}", runs=16)
        with pytest.raises(TypeError, match="order handed to your function"):
            run(graph)
        for made in graph.intermediates:
            with pytest.raises(TypeError, match="order handed to your function"):
                torch.autograd.grad(graph.output, made, retain_graph=True)


def test_a_pass_asks_each_step_once_and_the_passes_are_counted():
    """A step asked twice in one pass, a pass that starts below the output's step, and a pass
    past the number the test runs are refused; the answers name what to do."""
    graph, _ = _hand_graph("key", runs=1)
    with torch.no_grad(), pytest.raises(TypeError, match="of shape"):
        graph.output.grad_fn(torch.ones(99))  # a wrong gradient costs no pass
    order = graph.order
    steps = [node for node in order if type(node).__name__ == "_DrawnStepBackward"]
    with torch.no_grad(), pytest.raises(TypeError, match="order handed"):
        steps[1](torch.ones(3))  # no pass has started: the output's step comes first
    _walk(graph.output, order)
    with torch.no_grad(), pytest.raises(TypeError, match="once per call of your function"):
        steps[0](torch.ones(()))
    again, _ = _hand_graph("key", runs=2)
    steps = [n for n in again.order if type(n).__name__ == "_DrawnStepBackward"]
    with torch.no_grad():
        steps[0](torch.ones(()))
        steps[1](torch.ones(3))
        with pytest.raises(TypeError, match=ORDER[:40]):
            steps[1](torch.ones(3))  # the same step twice in one pass


def test_a_step_is_called_like_a_built_in_node_and_reveals_no_matrix_in_one_pass():
    """A step node takes the gradient of what it made and returns one tensor of its input's
    shape; its Jacobian mixes the elements (so one product with a vector of ones, the most a
    pass allows per step, does not give it), and a wrong gradient gets a message."""
    graph, record = _hand_graph("key7", runs=3)
    node = graph.intermediates[0].grad_fn
    assert type(node).__name__ == "_DrawnStepBackward"
    assert len(node.next_functions) == 1
    with torch.no_grad():
        graph.output.grad_fn(torch.ones(()))
    mixing = [s for s in record.steps if s.mix.numel() > 1]
    assert mixing and all((s.mix - torch.diag(s.mix.diagonal())).abs().max() > 0 for s in mixing)
    with torch.no_grad(), pytest.raises(TypeError, match="gradient tensors"):
        node(None)
