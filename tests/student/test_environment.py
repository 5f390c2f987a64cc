"""The pip and conda descriptions of the course environment declare the same pins, and the
conda one (what Binder builds) gets the CPU build of torch."""

import json
import re
import subprocess
import sys
import tomllib

import yaml

from grader.course import REPO_ROOT

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
CUDA = re.compile(r"nvidia|cuda|triton", re.IGNORECASE)


def _pyproject_pins() -> set[str]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    return set(project["dependencies"]) | set(project["optional-dependencies"]["dev"])


def _conda_pip_section() -> list[str]:
    env = yaml.safe_load((REPO_ROOT / "environment.yml").read_text())
    return next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))


def _conda_pins() -> set[str]:
    return {line for line in _conda_pip_section() if not line.startswith("-")}


def _public(pin: str) -> str:
    """A pin without its local version label: torch==2.13.0+cpu is torch==2.13.0's CPU build."""
    return pin.split("+", 1)[0]


def test_environment_yml_declares_the_pyproject_pins():
    """environment.yml and pyproject.toml pin the same packages and versions (the conda file
    may name the CPU build of a version)."""
    assert {_public(pin) for pin in _conda_pins()} == _pyproject_pins()


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


def test_every_dependency_is_pinned_exactly():
    """Printed outputs depend on versions, so every dependency is pinned with ==."""
    loose = [pin for pin in _pyproject_pins() if "==" not in pin]
    assert loose == []


def test_torch_is_the_version_the_outputs_were_made_with():
    """The stored lesson outputs were produced with torch 2.13.0."""
    assert "torch==2.13.0" in _pyproject_pins()


def test_environment_yml_uses_python_311():
    """conda builds the same Python the Makefile asks for."""
    env = yaml.safe_load((REPO_ROOT / "environment.yml").read_text())
    assert "python=3.11" in env["dependencies"]
