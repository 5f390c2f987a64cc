"""The protections line says only what holds on this machine."""

from grader.sandbox.outside.isolation import Protections


def test_a_user_of_its_own_is_claimed_only_where_submissions_get_one():
    """Submissions that run as the grader's own user are not described as having their own."""
    shared_user = Protections(pid_namespace=False, own_user=False, missing=["no bubblewrap"])
    own_user = Protections(pid_namespace=True, own_user=True, per_submission=True)
    assert "user of its own" not in shared_user.describe()
    assert "unprivileged user of its own" in own_user.describe()
