"""The README's two commands stay true: CI runs exactly its test command."""
import re
from pathlib import Path

from _util import ROOT as _ROOT

ROOT = Path(_ROOT)


def _commands():
    return re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)


def test_ci_runs_the_readme_test_command():
    test_cmd = [c for c in _commands() if "pytest" in c]
    assert len(test_cmd) == 1
    assert test_cmd[0].strip() in (ROOT / ".ci" / "run").read_text().splitlines()


def test_readme_main_job_command():
    run_cmd = [c for c in _commands() if c.rstrip().endswith("gemmkit bench")]
    assert len(run_cmd) == 1 and "requirements-cpu.txt" in run_cmd[0]


def test_cpu_requirements_take_the_cpu_build_of_torch():
    """From the public index, plain `torch==X` on Linux is the CUDA build (GBs of NVIDIA wheels): the CPU
    file names the "+cpu" build and PyTorch's CPU index, so pip takes it or fails, never the CUDA one."""
    lines = [ln.strip() for ln in (ROOT / "requirements-cpu.txt").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines
    torch_pins = [ln for ln in lines if re.match(r"torch\b", ln)]
    assert len(torch_pins) == 1 and re.fullmatch(r"torch==[\d.]+\+cpu", torch_pins[0]), torch_pins
