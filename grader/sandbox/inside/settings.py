"""Runs inside the sandbox, in the template: what the grading process told it (through its
environment), as every server and submission process below it sees it."""

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    """The template's settings; each server adds its own descriptors, each submission its user."""

    isolate: bool  # each submission gets namespaces, a fresh /tmp and a user of its own
    scratch_bytes: int  # the size of each submission's fresh /tmp and /dev/shm
    # The template runs in a PID namespace of its own, so every process below a server can be
    # found (and stopped); without one, only a submission's session can.
    pid_namespace: bool
    server_fds: tuple[int, ...] = ()  # the serving server's own channel: no submission's
    uid: int | None = None  # the submission's own user (where it runs as root)

    @classmethod
    def from_environment(cls) -> "Settings":
        """The settings the grading process put in the template's environment."""
        return cls(
            isolate=os.environ.get("GRADER_ISOLATE") == "1",
            scratch_bytes=int(os.environ.get("GRADER_SCRATCH_BYTES", str(512 * 1024**2))),
            pid_namespace=os.environ.get("GRADER_PID_NAMESPACE") == "1",
        )
