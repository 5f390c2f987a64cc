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


def test_without_a_proc_of_its_own_no_template_is_shared(monkeypatch):
    """Where a submission's namespaces can be made but its /proc cannot hide other users'
    processes (not root, or Linux before 5.8), the line says a submission can list them, and no
    template is shared by grading processes, whose submissions would see each other's."""
    from grader.sandbox.outside import isolation

    monkeypatch.setattr(isolation, "_UNSHARE_TRIAL", "import sys; sys.exit(2)")
    protections = isolation.detect_protections()[0]
    assert protections.per_submission and not protections.processes_hidden
    assert not protections.shareable
    line = protections.describe()
    assert "no other process visible" not in line
    assert "a submission can list the sandbox's processes and read their command lines" in line


# Run in the sandbox: every other pid it can list or guess, and what of it it can read.
LOOK_AT_OTHER_PROCESSES = """
import os, subprocess, time
child = subprocess.Popen(["sleep", "30"])
time.sleep(0.3)  # vfork lets the parent go on a moment before exec makes the child readable
mine = {os.getpid(), child.pid}
listed = {int(name) for name in os.listdir("/proc") if name.isdigit()}
readable = {}
for pid in sorted((listed | set(range(1, 200))) - mine):
    for name in ("cmdline", "environ", "status"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as entry:
                entry.read()
            readable.setdefault(pid, []).append(name)
        except OSError:
            pass
child.kill()
print("listed", sorted(listed - mine), "readable", readable, "own child", child.pid in listed)
"""


def test_a_submission_sees_no_other_process():
    """Where submissions run as users of their own, a submission lists and reads nothing of the
    sandbox's other processes (bubblewrap, the template, its attendant), though it sees its own
    child; elsewhere the protections line says that it can."""
    from grader.sandbox.outside.client import Sandbox
    from grader.sandbox.outside.isolation import Limits, detect_protections

    protections = detect_protections()[0]
    if not protections.processes_hidden:
        assert "a submission can list the sandbox's processes" in protections.describe()
        return
    sandbox = Sandbox(Limits(cell_seconds=20, notebook_seconds=60))
    try:
        report = sandbox.run([(0, LOOK_AT_OTHER_PROCESSES)], {})
    finally:
        sandbox.stop()
    assert report.outcome == "graded", report.detail
    printed = report.cells[0]["outputs"][0]["text"]
    assert printed == "listed [] readable {} own child True\n"
