"""The verdict on an answer that lists the nodes of a graph: an order, or a map from node to value.

The probe reports such an answer as data (`grader.probing.node_listing`): each entry's type, the
entry it repeats, and where each of its inputs is listed. No walk of the graph happens in the
submission's process, so no walker is there for an answer to call. Here, from data alone, the
listing's graph is read from its root, each node named by the order a breadth-first walk meets it
(its inputs in their order); two listings of the same graph read the same. A listing is right when
it holds every node the reference's does and nothing else, each once, its graph reads as the
reference's, and, for an order, each node's inputs come on the side the exercise asks for; for a
map, each node's value is the reference's.
"""

from collections import deque

REPEATED = "a node is listed more than once"
MISSING = "a node of the graph is missing"
FOREIGN = "an entry is no node of the graph"
NOT_THE_GRAPH = "the nodes listed are not the graph's"
EARLY = {True: "a node is listed before one of its inputs", False: (
    "a node is listed before one of the nodes that use it")}  # fmt: skip
VALUE = "a node's value differs from what a correct answer gives"


class Unreadable(ValueError):
    """The submission's report is not a listing."""


def problem(wanted, got, rule: dict) -> str | None:
    """What is wrong with the listing `got`, the reference's being `wanted`; None if nothing."""
    if not isinstance(got, list):
        kind = "list" if rule["nodes"] == "order" else "dict"
        return f"a {got if isinstance(got, str) else 'value'} was returned, not a {kind}"
    root, entries, values = _read(got)
    if rule["nodes"] == "map" and values is None:
        return "a list was returned, not a dict"
    reference = _reading(*_read(wanted)[:2])
    if root < 0:
        return MISSING
    repeated = any(first != i for i, (_, first, _) in enumerate(entries))
    met, shape = _reading(root, entries)
    if any(-1 in inputs for _, inputs in shape):
        return MISSING
    if repeated:
        return REPEATED
    if len(met) < len(entries):
        return FOREIGN
    if shape != reference[1]:
        return NOT_THE_GRAPH
    if rule["nodes"] == "order":
        inputs_first = rule["inputs_first"]
        for position, (_, inputs) in zip(met, shape, strict=True):
            if any((met[i] < position) != inputs_first for i in inputs):
                return EARLY[inputs_first]
        return None
    for mine, theirs in zip(met, reference[0], strict=True):
        if not _same_value(values[mine], wanted[2][theirs]):
            return VALUE
    return None


def _same_value(got, wanted) -> bool:
    """Equal and of the same type: a count of 2.0 is not the count 2."""
    return type(got) is type(wanted) and got == wanted


def _read(listing) -> tuple[int, list, list | None]:
    """(root, entries, values) of a reported listing, each checked for its form."""
    if not (isinstance(listing, list) and len(listing) == 3):
        raise Unreadable("not a listing")
    root, entries, values = listing
    count = len(entries) if isinstance(entries, list) else -1
    if not (_index(root, count) and count >= 0):
        raise Unreadable("no root or no entries")
    for i, entry in enumerate(entries):
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)):
            raise Unreadable("an entry of another form")
        _, first, inputs = entry
        if not (_index(first, i + 1) and first >= 0 and isinstance(inputs, list)):
            raise Unreadable("an entry of another form")
        if entries[first][1] != first or not all(_index(j, count) for j in inputs):
            raise Unreadable("an entry of another form")
    if values is not None and not (isinstance(values, list) and len(values) == count):
        raise Unreadable("values of another form")
    if root >= 0 and entries[root][1] != root:
        raise Unreadable("a root that repeats an entry")
    return root, entries, values


def _index(value, count: int) -> bool:
    return type(value) is int and -1 <= value < count


def _reading(root: int, entries: list) -> tuple[list[int], list]:
    """The entries a walk from the root meets, in the order it meets them (each its first
    occurrence), and the graph as the walk reads it: each node's type and its inputs, by the
    walk's numbers (-1 for an input not listed)."""
    if root < 0:
        return [], []
    number = {root: 0}
    met, shape, todo = [root], [], deque([root])
    while todo:
        kind, _, inputs = entries[todo.popleft()]
        numbered = []
        for j in inputs:
            if j < 0:
                numbered.append(-1)
                continue
            j = entries[j][1]
            if j not in number:
                number[j] = len(met)
                met.append(j)
                todo.append(j)
            numbered.append(number[j])
        shape.append((kind, numbered))
    return met, shape
