"""Lesson 11's drawn programs: the secrets that make a backward pass the only route to their
gradients, kept where the program's answer cannot reach them (`grader.function_oracle`).

A drawn program (`grader.lesson_checks.lesson_11.DrawnProgram`) runs on the student's Values.
Each input also feeds a constant computed from its value and recorded with no parents, a sin(b x
+ c) whose slope the chain rule leaves out; and some of its nodes are a drawn function of one
number, made as a Value of the given value and local derivative, so that the student's engine
cannot evaluate them anywhere else. Both are asked once per run, and the runs are counted, so no
answer evaluates the program at a second point (a finite difference).
"""

import math
import random
from dataclasses import dataclass, field


@dataclass
class Program:
    """Lesson 11's secrets of one drawn program: the constants its inputs feed (a sin(b x + c)),
    and its drawn nodes (functions of one number); each asked once per run, `runs` runs."""

    constants: list[tuple[float, float, float]]  # a, b, angle: a sin(b (x - x0) + angle)
    nodes: list[tuple[float, float, float]]
    runs: int
    started: int = 0
    asked: set = field(default_factory=set)  # the nodes asked in the current run
    origin: list[float] = field(default_factory=list)  # x0: the first run's inputs

    def run(self, xs: list[float]) -> list[float]:
        """Start a run at `xs`: the constants they feed."""
        if self.started >= self.runs:
            raise TypeError(
                f"the drawn function runs {self.runs} time(s) here, once per list of gradients: "
                "run it once on Values and walk the graph it records backward (sections 3 to 5)"
            )
        if len(xs) != len(self.constants):
            raise TypeError(f"this drawn function takes {len(self.constants)} Values")
        self.started += 1
        self.asked = set()
        self.origin = self.origin or list(xs)
        return [
            a * math.sin(b * (x - x0) + angle)
            for x, x0, (a, b, angle) in zip(xs, self.origin, self.constants, strict=True)
        ]

    def node(self, index: int, at: float) -> tuple[float, float]:
        """Node `index` of the current run at `at`: its value and its local derivative."""
        if not self.started or index in self.asked or not 0 <= index < len(self.nodes):
            raise TypeError("a drawn function's nodes are made once per run, by the function")
        self.asked.add(index)
        return node_value(self.nodes[index], at)


def node_value(node: tuple[float, float, float], at: float) -> tuple[float, float]:
    """A drawn node p * softplus(q x + r) + x / 4 at x, and its slope (q p sigmoid + 1/4)."""
    p, q, r = node
    z = q * at + r
    small = math.exp(-abs(z))
    sigmoid = 1.0 / (1.0 + small) if z >= 0 else small / (1.0 + small)
    return p * (max(z, 0.0) + math.log1p(small)) + at / 4, p * q * sigmoid + 0.25


def draw_program(rng: random.Random, inputs: int, nodes: int, runs: int) -> Program:
    """A program's constants and nodes drawn from `rng`, to run `runs` times."""
    constants = []
    for _ in range(inputs):  # a slope a b cos(b x + c) of 0.56 to 1.5 in size near the drawn x
        b, angle = rng.uniform(1.0, 2.0), rng.uniform(-0.8, 0.8) + rng.choice([0.0, math.pi])
        constants.append((rng.uniform(0.8, 1.5) / b, b, angle))
    drawn = [
        (rng.uniform(0.5, 1.2), rng.choice([-1, 1]) * rng.uniform(0.6, 1.4), rng.uniform(-1, 1))
        for _ in range(nodes)
    ]
    return Program(constants, drawn, runs)
