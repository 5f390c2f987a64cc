"""What a submission's seed is split into: the seed of its inputs, which its process is given,
and the key of its drawn functions, which stays outside it (`grader.function_oracle`). The
grading process and the reference server know the seed; no one who knows only the inputs seed
can work out the key."""

import hashlib


def inputs_seed(seed: int) -> int:
    """The seed a submission's probes draw their inputs from."""
    return int(hashlib.sha256(f"inputs/{seed}".encode()).hexdigest()[:15], 16)


def functions_key(seed: int) -> str:
    """The key a submission's functions are drawn from (`grader.drawn_functions`)."""
    return hashlib.sha256(f"functions/{seed}".encode()).hexdigest()
