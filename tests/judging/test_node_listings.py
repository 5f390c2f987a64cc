"""An answer that lists a graph's nodes is judged from data alone: the probe reports what the
answer lists (grader.probing.node_listing), without walking the graph, and the judge reads each
listing's graph from its root and names what is wrong."""

import pytest
import torch

from grader.judging import node_listings
from grader.judging.verdict import verdict
from grader.probing import autograd_inputs, node_listing

ORDER = {"nodes": "order", "inputs_first": False}
MAP = {"nodes": "map", "inputs_first": False}


def _graph():
    """out = (y * y + y).sum() with y = 2x: y's node listed twice by one node, once by another."""
    x = torch.ones(2, requires_grad=True)
    y = 2 * x
    square = y * y
    total = square + y
    out = total.sum()
    accumulate = y.grad_fn.next_functions[0][0]
    order = [out.grad_fn, total.grad_fn, square.grad_fn, y.grad_fn, accumulate]
    return out, order


def _listed(found, out):
    return node_listing(found, out.grad_fn, autograd_inputs)


def test_a_right_order_in_any_valid_arrangement_passes():
    out, order = _graph()
    wanted = _listed(order, out)
    assert node_listings.problem(wanted, wanted, ORDER) is None
    other_out, other = _graph()  # the same graph built again: its own nodes
    assert node_listings.problem(wanted, _listed(other, other_out), ORDER) is None


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda o, out: o[:-1], node_listings.MISSING),
        (lambda o, out: o[1:], node_listings.MISSING),
        (lambda o, out: o + [o[2]], node_listings.REPEATED),
        (lambda o, out: o + [torch.ones(1).add(torch.ones(1, requires_grad=True)).grad_fn],
         node_listings.FOREIGN),
        (lambda o, out: [o[0], o[2], o[1], o[3], o[4]], node_listings.EARLY[False]),
        (lambda o, out: o[::-1], node_listings.EARLY[False]),
    ],
)  # fmt: skip
def test_each_fault_of_an_order_is_named(change, said):
    out, order = _graph()
    wanted = _listed(order, out)
    assert node_listings.problem(wanted, _listed(change(list(order), out), out), ORDER) == said


def test_an_order_of_another_graph_is_not_the_graphs():
    """Even a valid order with every node listed fails on a graph read differently: a report
    forged from another graph's shape."""
    out, order = _graph()
    x = torch.ones(2, requires_grad=True)
    y = 2 * x
    other = (y * y + y * 3).sum()
    nodes = [other.grad_fn, other.grad_fn.next_functions[0][0]]
    nodes += [n for n, _ in nodes[1].next_functions] + [y.grad_fn, y.grad_fn.next_functions[0][0]]
    problem = node_listings.problem(_listed(order, out), _listed(nodes, other), ORDER)
    assert problem == node_listings.NOT_THE_GRAPH


def test_inputs_first_asks_the_other_direction():
    out, order = _graph()
    wanted = _listed(order[::-1], out)
    rule = {"nodes": "order", "inputs_first": True}
    assert node_listings.problem(wanted, wanted, rule) is None
    assert node_listings.problem(wanted, _listed(order, out), rule) == node_listings.EARLY[True]


def test_a_map_is_judged_node_by_node_whatever_its_keys_order():
    out, order = _graph()
    counts = dict(zip(order, [0, 1, 1, 3, 1], strict=True))
    wanted = _listed(counts, out)
    shuffled = {node: counts[node] for node in [order[3], order[0], order[4], order[2], order[1]]}
    assert node_listings.problem(wanted, _listed(shuffled, out), MAP) is None
    assert node_listings.problem(wanted, _listed({**counts, order[3]: 2}, out), MAP) == (
        node_listings.VALUE
    )
    assert node_listings.problem(wanted, _listed({**counts, order[3]: 3.0}, out), MAP) == (
        node_listings.VALUE
    )
    fewer = {node: count for node, count in counts.items() if node is not order[4]}
    assert node_listings.problem(wanted, _listed(fewer, out), MAP) == node_listings.MISSING
    assert (
        node_listings.problem(wanted, _listed(order, out), MAP) == "a list was returned, not a dict"
    )


@pytest.mark.parametrize(
    "forged",
    [
        None,
        [0, [["MulBackward0", 0, [5]]], None],
        [0, [["MulBackward0", 1, []], ["X", 1, []]], None],
        [True, [], None],
        [0, [["SumBackward0", 0, []]], [1, 2]],
        [3, [], None],
        {"root": 0},
    ],
)
def test_a_forged_listing_is_unreadable_not_an_error(forged):
    out, order = _graph()
    reference = [["the order", _listed(order, out), ORDER]]
    assert verdict(reference, [["the order", forged]]) in {
        "the report could not be read",
        "the order: a value was returned, not a list",
    }


def test_the_verdict_names_the_label_and_the_fault():
    out, order = _graph()
    reference = [["drawn graph 1: the order", _listed(order, out), ORDER]]
    reported = [["drawn graph 1: the order", _listed(order[:-1], out)]]
    assert verdict(reference, reported) == f"drawn graph 1: the order: {node_listings.MISSING}"
