"""`.ci/run` installs the Debian packages the tests need and the machine lacks, as CI here runs it
(root) and as GitHub's runners run it (a user with passwordless sudo), then runs `make test` and
`make portability`. Here `apt-get`, `sudo`, `make` and `npm` are stand-ins that record how they
were called."""

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from grader.course import REPO_ROOT

RECORDER = '#!/bin/sh\necho "{name} $*" >> "$CALLS"\n'
SUDO = '#!/bin/sh\necho "sudo $*" >> "$CALLS"\n[ "$1" = -n ] && shift\nexec "$@"\n'


def _run_ci(tmp_path, *, user: str | None) -> list[str]:
    """.ci/run with a PATH that has no bwrap or chromium (so it must install them) but has npm
    (from elsewhere, as on a machine whose apt cannot install Debian's npm), as `user`."""
    tmp_path.mkdir()
    tools = tmp_path / "bin"
    tools.mkdir()
    stand_ins = {"apt-get": RECORDER, "make": RECORDER, "sudo": SUDO, "npm": RECORDER}
    for name, script in stand_ins.items():
        (tools / name).write_text(script.format(name=name))
        (tools / name).chmod(0o755)
    for name in ("id", "ls", "dirname", "env", "bash", "sh"):
        (tools / name).symlink_to(shutil.which(name))
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    for script in ("run", "system-packages"):
        shutil.copy(REPO_ROOT / ".ci" / script, repo / ".ci" / script)
    calls = tmp_path / "calls"
    calls.touch()
    for path in (tmp_path, tools, repo, repo / ".ci", calls):
        path.chmod(path.stat().st_mode | stat.S_IRWXO)
    as_user = (
        [shutil.which("setpriv"), f"--reuid={user}", "--regid=nogroup", "--clear-groups"]
        if user
        else []
    )
    environment = {"PATH": str(tools), "CALLS": str(calls)}
    command = [*as_user, str(tools / "bash"), str(repo / ".ci" / "run")]
    run = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return calls.read_text().splitlines()


def test_ci_installs_what_is_missing_through_sudo_unless_root_then_runs_make_test(tmp_path):
    """As root (CI here), apt-get runs directly; as any other user (GitHub's runners, or nobody
    when this runs as root), through `sudo -n`. Then `make test`, then `make portability`."""
    runs = {"as is": _run_ci(tmp_path / "self", user=None)}
    if os.geteuid() == 0:  # pytest's own folders are root's alone: one nobody can enter
        with tempfile.TemporaryDirectory() as shared:
            os.chmod(shared, 0o755)
            runs["as nobody"] = _run_ci(Path(shared) / "nobody", user="nobody")
    for who, calls in runs.items():
        apt = [call for call in calls if "apt-get " in call]
        through_sudo = [call for call in apt if call.startswith("sudo -n")]
        root = who == "as is" and os.geteuid() == 0
        assert (through_sudo == []) if root else (len(through_sudo) == 2), (who, calls)
        installs = [c.split(" -qq ")[1].split() for c in apt if c.startswith("apt-get install")]
        assert len(installs) == 1, (who, calls)
        assert {"bubblewrap", "chromium"} <= set(installs[0]), (who, calls)
        assert "npm" not in installs[0], (who, calls)  # its command is there already
        assert calls[-2:] == ["make test", "make portability"], (who, calls)
