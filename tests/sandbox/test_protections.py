"""The protections line says only what holds on this machine."""

from grader.sandbox.outside.isolation import Protections


def test_a_user_of_its_own_is_claimed_only_where_submissions_get_one():
    """Submissions that run as the grader's own user are not described as having their own."""
    shared_user = Protections(pid_namespace=False, own_user=False, missing=["no bubblewrap"])
    own_user = Protections(pid_namespace=True, own_user=True, per_submission=True)
    assert "user of its own" not in shared_user.describe()
    assert "unprivileged user of its own" in own_user.describe()


def test_without_bubblewrap_the_host_cgroups_still_limit_memory(monkeypatch):
    """Where bubblewrap is missing, isolation is off but the cgroups need no namespace: on a host
    that offers a memory cgroup, the sandbox still limits memory over all of a submission's
    processes (three children of 300 MB under a 600 MB limit hit it together); where the host
    offers none, the line says memory is limited per process. Checked on a cgroup v2 host too."""
    import shutil

    from cgroup_host import offered

    from grader.sandbox.outside import isolation
    from grader.sandbox.outside.client import Sandbox
    from grader.sandbox.outside.isolation import Limits

    found = shutil.which
    monkeypatch.setattr(
        isolation.shutil, "which", lambda name, *a, **k: None if name == "bwrap" else found(name)
    )
    protections = isolation.detect_protections()[0]
    line = protections.describe()
    assert "bubblewrap is not installed" in line and "isolation are OFF" in line
    assert protections.memory_cgroup == offered().memory, line
    if not offered().memory:
        assert "memory is limited per process" in line
        return
    spread = (
        "import os, time\nkids = []\nfor _ in range(3):\n    pid = os.fork()\n    if pid == 0:\n"
        "        block = b'x' * (300 * 1024**2)\n        time.sleep(4)\n        os._exit(0)\n"
        "    kids.append(pid)\nfor pid in kids:\n    os.waitpid(pid, 0)\n"
    )
    sandbox = Sandbox(Limits(cell_seconds=20, notebook_seconds=60, memory_bytes=600 * 1024**2))
    try:
        report = sandbox.run([(0, spread)], {})
    finally:
        sandbox.stop()
    assert (report.outcome, report.detail) == (
        "memory limit",
        "the submission's processes went over the memory limit together",
    )
