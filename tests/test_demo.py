"""`grader demo` grades the bundled example class with the pinned scores."""

from grader.cli import main

EXPECTED = {
    ("01_tensors_and_requires_grad", "alice"): 7,
    ("01_tensors_and_requires_grad", "bob"): 1,
    ("01_tensors_and_requires_grad", "carol"): 0,
}


def test_demo_prints_the_pinned_score_table(tmp_path, capsys):
    """Every example submission gets its pinned score, shown in the printed table."""
    assert main(["demo", "--out", str(tmp_path / "demo")]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:] if line.strip()]
    scores = {(r[0], r[1]): float(r[2]) for r in rows if len(r) == 5}
    assert scores == EXPECTED
    assert (tmp_path / "demo" / "gradebook.db").exists()
