"""The GPU tests' reading of compute-sanitizer reports (tests/_util.py `sanitizer_errors`): Triton's loader probe
is the one API error let through, a real error is never hidden, and a report whose count does not match its records
fails (CPU test: the reports below are laid out as compute-sanitizer 2025 prints them)."""
import pytest

from _util import assert_sanitizer_clean, sanitizer_errors

PROBE = """========= Program hit CUDA_ERROR_INVALID_VALUE (error 1) due to "invalid argument" on CUDA API call to \
cuFuncSetAttribute.
=========     Saved host backtrace up to driver entry point at error
=========         Host Frame: loadBinary [0x4b63] in cuda_utils.cpython-312-x86_64-linux-gnu.so
=========         Host Frame: _init_handles in compiler.py:479
=========         Host Frame: launch in launcher.py:166
========= """
OTHER_API = PROBE.replace("cuFuncSetAttribute", "cuLaunchKernelEx").replace(
    "loadBinary [0x4b63] in cuda_utils.cpython-312-x86_64-linux-gnu.so", "launch [0x1a2b] in cuda_utils.so").replace(
    "_init_handles in compiler.py:479", "run in jit.py:778")
READ = """========= Invalid __global__ read of size 16 bytes
=========     at hopper_pingpong_kernel+0x1f30
=========     by thread (0,0,0) in block (3,0,0)
=========     Address 0x7f0000001000 is out of bounds
========= """


def report(*records, count=None):
    n = len(records) if count is None else count
    return "\n".join(["========= COMPUTE-SANITIZER", *records, "sanitized run done",
                      f"========= ERROR SUMMARY: {n} error{'s' if n != 1 else ''}"])


def test_clean_and_probe_only_reports_pass():
    assert sanitizer_errors(report()) == []
    assert_sanitizer_clean(report(PROBE, PROBE, PROBE))


@pytest.mark.parametrize("other", [READ, OTHER_API], ids=["memcheck", "another_api_error"])
def test_real_errors_are_reported(other):
    errors = sanitizer_errors(report(PROBE, other, PROBE))
    assert len(errors) == 1 and errors[0].splitlines()[0] == other.splitlines()[0].removeprefix("========= ")
    with pytest.raises(AssertionError, match="1 errors"):
        assert_sanitizer_clean(report(other))


def test_a_count_the_records_do_not_explain_fails():
    with pytest.raises(AssertionError, match="ERROR SUMMARY 2 but 1 records"):
        sanitizer_errors(report(PROBE, count=2))
    with pytest.raises(AssertionError, match="no ERROR SUMMARY"):
        sanitizer_errors("========= COMPUTE-SANITIZER\nsanitized run done\n")
