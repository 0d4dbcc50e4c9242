"""tests/_bounds.py, the interpreter's bounds check that every CPU test runs under: it catches a load and a store
one element past a tensor (or past a view's elements, inside its storage), lets masked-off elements and pointer-table
tensors declared `reachable` through, and fails the test even where the test catches the kernel's error."""
import pytest
import torch
import triton
import triton.language as tl

import _bounds

pytestmark = pytest.mark.interpreter


@triton.jit
def _copy(src, dst, n_load, n_store, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(src + offs, mask=offs < n_load, other=0.0)
    tl.store(dst + offs, v, mask=offs < n_store)


@triton.jit
def _through_table(table, dst):
    p = tl.load(table).to(tl.pointer_type(tl.float32))
    tl.store(dst, tl.load(p))


def _launch(src, dst, n_load, n_store):
    _copy[(1,)](src, dst, n_load, n_store, BLOCK=16)


def test_masked_off_elements_are_not_accesses():
    src, dst = torch.arange(16, dtype=torch.float32)[:8].clone(), torch.zeros(8)
    _launch(src, dst, 8, 8)
    assert torch.equal(dst, src) and _bounds.take_violations() == []


@pytest.mark.parametrize("n_load, n_store, kind", [(9, 8, "load"), (8, 9, "store")])
def test_one_element_past_a_tensor_is_caught(n_load, n_store, kind):
    src, dst = torch.arange(8, dtype=torch.float32), torch.zeros(8)
    with pytest.raises(Exception):
        _launch(src, dst, n_load, n_store)
    violations = _bounds.take_violations()  # taken: the test itself must not fail for them
    assert len(violations) == 1 and f"_copy: {kind} of 1 element(s) of 4 bytes" in violations[0], violations


def test_a_view_may_touch_its_own_elements_only():
    """A view is checked as the view it is: past its last element (inside its storage, mapped memory) or in the gap
    of a strided view is caught; the storage's end too; a view's own elements, strided or not, are fine."""
    base = torch.arange(16, dtype=torch.float32)
    dst = torch.zeros(8)
    _launch(base[4:12], dst, 8, 8)  # exactly the view
    assert torch.equal(dst, base[4:12]) and _bounds.take_violations() == []
    for src in (base[4:8], base[12:]):  # past the view, inside its storage; past the storage's end
        with pytest.raises(Exception):
            _launch(src, dst, 8, 8)
        assert len(_bounds.take_violations()) == 1
    rows = base.view(4, 4)[:, :2]  # 4 rows of 2 elements at a pitch of 4: the kernel reads it as contiguous
    with pytest.raises(Exception):
        _launch(rows, dst, 8, 8)  # elements 2, 3 (the first gap) are not the view's
    violations = _bounds.take_violations()
    assert len(violations) == 1 and "inside one's storage" in violations[0]
    _strided[(1,)](rows, dst, 4, 2, BLOCK_R=4, BLOCK_C=2)  # its own elements through its strides
    assert torch.equal(dst, rows.reshape(-1)) and _bounds.take_violations() == []


@triton.jit
def _strided(src, dst, pitch, cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    r = tl.arange(0, BLOCK_R)[:, None]
    c = tl.arange(0, BLOCK_C)[None, :]
    tl.store(dst + r * cols + c, tl.load(src + r * pitch + c))


def test_pointer_tables_need_their_tensors_declared_reachable():
    far, dst = torch.tensor([3.5]), torch.zeros(1)
    table = torch.tensor([far.data_ptr()], dtype=torch.int64)
    with pytest.raises(Exception):
        _through_table[(1,)](table, dst)
    assert len(_bounds.take_violations()) == 1
    with _bounds.reachable(far):
        _through_table[(1,)](table, dst)
    assert dst.item() == 3.5 and _bounds.take_violations() == []
