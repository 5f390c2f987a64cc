"""Three descriptions of the environment stay in step: pyproject.toml admits what students have,
constraints.txt pins the versions the stored outputs are made with (what `make` and CI install),
environment.yml gives Binder the students' part of those pins, with the CPU build of torch."""

import email
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.version import Version
from portability.other_torch import build_wheel

from grader.course import REPO_ROOT

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
CUDA = re.compile(r"nvidia|cuda|triton", re.IGNORECASE)
STUDENT_EXTRAS = {"nbgrader"}  # Binder's students get the Validate button too


def _project() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]


def _requirements(*, extras: bool) -> list[Requirement]:
    project = _project()
    lines = list(project["dependencies"])
    if extras:
        lines += [line for group in project["optional-dependencies"].values() for line in group]
    found = [Requirement(line) for line in lines]
    return [r for r in found if r.name != project["name"]]  # an extra naming another extra


def _constraints() -> dict[str, Version]:
    lines = (REPO_ROOT / "constraints.txt").read_text().splitlines()
    pins = [Requirement(line) for line in lines if line.strip() and not line.startswith("#")]
    assert all(str(p.specifier).startswith("==") for p in pins), "constraints.txt pins with =="
    return {p.name: Version(str(p.specifier)[2:]) for p in pins}


def _conda_pip_section() -> list[str]:
    env = yaml.safe_load((REPO_ROOT / "environment.yml").read_text())
    return next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))


def _conda_pins() -> set[str]:
    return {line for line in _conda_pip_section() if not line.startswith("-")}


def test_constraints_pin_every_requirement_at_a_version_pyproject_admits():
    """Every package pyproject.toml names, extras included, is pinned exactly in constraints.txt,
    at a version its range admits, and nothing else is pinned there."""
    pins = _constraints()
    requirements = _requirements(extras=True)
    assert {r.name for r in requirements} == set(pins)
    refused = [str(r) for r in requirements if not r.specifier.contains(pins[r.name])]
    assert refused == []


def test_the_stored_outputs_torch_is_pinned():
    """The stored lesson outputs were produced with torch 2.13.0."""
    assert _constraints()["torch"] == Version("2.13.0")


def test_environment_yml_pins_the_students_part_of_the_constraints():
    """Binder gets the student package and Validate at the pinned versions, none of the grader's
    or the tests' stack."""
    pins = _constraints()
    student = {r.name for r in _requirements(extras=False)} | STUDENT_EXTRAS
    conda = {Requirement(pin.split("+", 1)[0]) for pin in _conda_pins()}
    assert {r.name for r in conda} == student
    assert {r.name: Version(str(r.specifier)[2:]) for r in conda} == {n: pins[n] for n in student}
    assert "-e ." in _conda_pip_section()


def test_environment_yml_gets_the_cpu_build_of_torch():
    """Binder and conda take torch 2.13.0's CPU build from PyTorch's CPU index, which is the only
    place a +cpu build comes from, so no CUDA build can be chosen instead."""
    options = [line for line in _conda_pip_section() if line.startswith("-")]
    assert f"--extra-index-url {CPU_INDEX}" in options
    assert "torch==2.13.0+cpu" in _conda_pins()


def test_the_declared_requirements_resolve_to_no_cuda_package(tmp_path):
    """pip resolves environment.yml's pins (this machine's package folders stand in for the CPU
    index, which is out of reach here) without a single nvidia, CUDA or triton package."""
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("\n".join(sorted(_conda_pins())))
    report = tmp_path / "report.json"
    pip = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"]
    subprocess.run([*pip, "--report", report, "-r", requirements], check=True, capture_output=True)
    installed = [item["metadata"]["name"] for item in json.loads(report.read_text())["install"]]
    assert "torch" in installed
    assert [name for name in installed if CUDA.search(name)] == []


def test_environment_yml_uses_python_311():
    """conda builds the Python CI uses."""
    env = yaml.safe_load((REPO_ROOT / "environment.yml").read_text())
    assert "python=3.11" in env["dependencies"]


def test_the_wheel_admits_python_310_to_313_and_any_torch_from_24(tmp_path):
    """Read from the built wheel's metadata, as pip reads it: Python 3.10 to 3.13 and torch 2.4
    onward (CPU or CUDA builds, today's included) for the student install; the grading stack only
    under the extras."""
    wheel = build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(archive.read(name))
    python = Requirement(f"python{metadata['Requires-Python']}").specifier
    assert all(python.contains(v) for v in ("3.10.0", "3.11.9", "3.12.3", "3.13.1"))
    required = [Requirement(line) for line in metadata.get_all("Requires-Dist")]
    plain = {r.name: r for r in required if r.marker is None}
    assert {"torch", "numpy", "matplotlib", "jupyterlab"} <= set(plain)
    for torch in ("2.4.0", "2.11.0", "2.13.0+cpu", "2.14.1"):
        assert plain["torch"].specifier.contains(torch, prereleases=True), torch
    assert "nbgrader" not in plain and "pytest" not in plain
    instructor = [
        r.name for r in required if r.marker and r.marker.evaluate({"extra": "instructor"})
    ]
    assert "nbgrader" in instructor


def test_the_package_needs_no_python_newer_than_310():
    """vermin reads every module of the package (and the portability scripts, which run in a
    student's environment) for syntax and standard library newer than Python 3.10, which the
    metadata admits; only 3.11 runs here."""
    paths = [REPO_ROOT / "grader", REPO_ROOT / "tests" / "portability"]
    command = [Path(sys.executable).with_name("vermin"), "--no-tips", "--violations", "-t=3.10-"]
    found = subprocess.run([*command, "--eval-annotations", *paths], capture_output=True, text=True)
    assert found.returncode == 0, found.stdout


def _as_python(line: str) -> str:
    """An IPython `%magic` or `!command` line as `pass` (it is not Python); others unchanged."""
    code = line.lstrip()
    return line[: len(line) - len(code)] + "pass" if code.startswith(("%", "!")) else line


def _cells_as_modules(folder: Path) -> list[Path]:
    """Each lesson notebook's code, one module per notebook."""
    modules = []
    for notebook in sorted(REPO_ROOT.glob("solutions/*/*.ipynb")):
        cells = nbformat.read(notebook, as_version=4).cells
        code = [c.source for c in cells if c.cell_type == "code"]
        lines = [_as_python(line) for line in "\n\n".join(code).splitlines()]
        module = folder / f"{notebook.stem}.py"
        module.write_text("\n".join(lines) + "\n")
        modules.append(module)
    return modules


def test_the_lessons_need_no_python_newer_than_310(tmp_path):
    """vermin reads every lesson's code (lesson cells, solutions and tests) for syntax and
    standard library newer than Python 3.10: a student may run the notebooks there."""
    modules = _cells_as_modules(tmp_path)
    assert len(modules) >= 7
    command = [Path(sys.executable).with_name("vermin"), "--no-tips", "--violations", "-t=3.10-"]
    found = subprocess.run([*command, *modules], capture_output=True, text=True)
    assert found.returncode == 0 and "error:" not in found.stdout, found.stdout
