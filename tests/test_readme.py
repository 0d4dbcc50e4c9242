"""The README's two commands stay true: CI runs exactly its test command."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _commands():
    return re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)


def test_ci_runs_the_readme_test_command():
    test_cmd = [c for c in _commands() if "pytest" in c]
    assert len(test_cmd) == 1
    assert test_cmd[0].strip() in (ROOT / ".ci" / "run").read_text().splitlines()


def test_readme_main_job_command():
    run_cmd = [c for c in _commands() if c.rstrip().endswith("gemmkit bench")]
    assert len(run_cmd) == 1 and "requirements-cpu.txt" in run_cmd[0]
