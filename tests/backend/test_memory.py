"""`kerasrs.backend.memory`: pooled large arrays. A block must never be handed out again while
any array or view on it is alive, and must be reused once none is."""

import copy
import gc
import pickle
import threading

import numpy as np
import pytest

import kerasrs
from kerasrs.backend import memory

BIG = memory.MIN_BYTES // 8 + 3  # float64 elements: just above the pooling threshold


@pytest.fixture(autouse=True)
def fresh_pool():
    memory.clear()
    yield
    gc.collect()
    memory.clear()


def address(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("shape,dtype", [((0,), "float32"), ((10,), "float64"),
                                         ((memory.MIN_BYTES // 4 - 1,), "float32"),
                                         ((3, 0, 1 << 20), "float32")])
def test_small_arrays_are_plain(shape, dtype):
    a = memory.empty(shape, dtype)
    assert a.shape == shape and a.dtype == dtype and a.flags.c_contiguous
    assert a.base is None  # np.empty's own memory
    assert memory.kept_bytes() == 0


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "complex64", "bool"])
def test_large_arrays_are_pooled_writable_and_contiguous(dtype):
    n = memory.MIN_BYTES // np.dtype(dtype).itemsize + 1
    a = memory.empty((n,), dtype)
    assert a.dtype == dtype and a.shape == (n,) and a.flags.c_contiguous and a.flags.writeable
    assert type(a.base).__name__ == "_Owner"
    a[...] = 1
    assert a.all()
    b = memory.empty((2, 3, n), np.dtype(dtype))
    assert b.shape == (2, 3, n) and b.dtype == dtype


@pytest.mark.parametrize("dtype", [np.dtype([("a", "f4"), ("b", "f8")]), np.dtype(("f4", 3)),
                                   np.dtype(object), "bfloat16"])
def test_other_dtypes_come_back_as_asked(dtype):
    dtype = kerasrs.backend.base.numpy_dtype(dtype) if dtype == "bfloat16" else dtype
    a = memory.empty((BIG,), dtype)
    want = np.empty((BIG,), dtype)
    assert a.dtype == want.dtype and a.shape == want.shape


VIEWS = {
    "array": lambda a: a,
    "slice": lambda a: a[1:-1],
    "reshape": lambda a: a.reshape(3, -1),
    "transpose": lambda a: a.reshape(3, -1).T,
    "view of a view": lambda a: a[::2].reshape(-1)[1:][None],
    "dtype view": lambda a: a.view(np.int64),
    "np.asarray": lambda a: np.asarray(a[5:]),
    "memoryview": lambda a: memoryview(a),
    "flat element view": lambda a: a[7:8],
}


@pytest.mark.parametrize("kind", VIEWS)
def test_a_block_is_not_reused_while_a_view_is_alive(kind):
    n = 3 * (BIG // 3)
    a = memory.empty((n,), "float64")
    a[...] = np.arange(n)
    start = address(a)
    keep = VIEWS[kind](a)
    expect = np.array(keep, copy=True)
    del a
    gc.collect()
    assert memory.kept_bytes() == 0
    others = [memory.empty((n,), "float64") for _ in range(3)]
    for b in others:
        assert address(b) != start
        b[...] = -1
    np.testing.assert_array_equal(np.asarray(keep), expect)  # not overwritten
    del keep, others, b
    gc.collect()
    assert memory.kept_bytes() == 4 * memory._size_class(n * 8)  # now every block is free
    again = [memory.empty((n,), "float64") for _ in range(4)]
    assert start in {address(b) for b in again}  # and reused


def test_a_block_is_reused_for_another_shape_of_the_same_size():
    a = memory.empty((4, BIG), "float32")
    start = address(a)
    del a
    b = memory.empty((BIG, 2), "float64")  # same number of bytes
    assert address(b) == start and b.shape == (BIG, 2)
    c = memory.empty((4, BIG + 1), "float32")  # other size: another block
    assert address(c) != start


@pytest.mark.parametrize("clone", [copy.copy, copy.deepcopy, np.copy,
                                   lambda a: pickle.loads(pickle.dumps(a)),
                                   lambda a: pickle.loads(pickle.dumps(a, protocol=5))])
def test_arrays_survive_copy_and_pickling(clone):
    a = memory.empty((BIG,), "float64")
    a[...] = np.arange(BIG)
    b = clone(a)
    assert b.dtype == a.dtype and b.shape == a.shape and not np.shares_memory(a, b)
    del a
    gc.collect()
    c = memory.empty((BIG,), "float64")
    c[...] = -1
    np.testing.assert_array_equal(b, np.arange(BIG))
    del b  # a plain array now: freeing it returns nothing to the pool
    gc.collect()
    assert memory.kept_bytes() == 0


def test_free_blocks_are_capped_by_max_free_bytes(monkeypatch):
    nbytes = memory._size_class(BIG * 8)
    monkeypatch.setattr(memory, "MAX_FREE_BYTES", 3 * nbytes)
    arrays = [memory.empty((BIG,), "float64") for _ in range(5)]
    for k in range(5):  # the fourth freed block finds the pool full: it starts again
        arrays.pop()
        gc.collect()
        assert memory.kept_bytes() == [1, 2, 3, 1, 2][k] * nbytes
    assert len(memory._free[nbytes]) == 2


def test_a_pool_of_stale_sizes_makes_room_for_new_ones(monkeypatch):
    monkeypatch.setattr(memory, "MAX_FREE_BYTES", 3 * memory._size_class(BIG * 8))
    stale = [memory.empty((BIG,), "float64") for _ in range(3)]
    del stale
    gc.collect()
    new = memory.empty((2 * BIG,), "float64")  # a size the pool has no block for
    del new
    gc.collect()
    assert memory._size_class(2 * BIG * 8) in memory._free


def test_sizes_within_an_eighth_share_blocks():
    memory.clear()
    a = memory.empty((BIG,), "float64")
    block = a.base.block
    del a
    gc.collect()
    b = memory.empty((BIG + BIG // 10,), "float64")  # 10 % larger: the same size class
    assert b.base.block is block
    assert memory._size_class(1 << 20) == 1 << 20
    assert all(n <= memory._size_class(n) <= n * 1.125 for n in range(1 << 20, 1 << 22, 9973))


def test_clear_and_clear_session_release_free_blocks():
    arrays = [memory.empty((BIG,), "float64") for _ in range(2)]
    kept = memory.empty((BIG,), "float64")
    del arrays
    gc.collect()
    assert memory.kept_bytes() == 2 * memory._size_class(BIG * 8)
    memory.clear()
    assert memory.kept_bytes() == 0 and not memory._free
    arrays = [memory.empty((BIG,), "float64") for _ in range(2)]
    del arrays
    gc.collect()
    assert memory.kept_bytes() > 0
    kerasrs.utils.clear_session()
    assert memory.kept_bytes() == 0
    kept[...] = 2  # an array in use stays valid, and returns to the pool when dropped
    assert (kept == 2).all()
    del kept
    gc.collect()
    assert memory.kept_bytes() == memory._size_class(BIG * 8)


def test_threads_allocating_and_freeing_never_share_a_block():
    sizes = [BIG, BIG + 8, 2 * BIG]
    live, errors = [], []
    lock = threading.Lock()

    def work(tid):
        rng = np.random.default_rng(tid)
        mine = []
        try:
            for i in range(300):
                a = memory.empty((int(rng.choice(sizes)),), "float64")
                tag = tid * 1000 + i
                a[::4096] = tag
                mine.append((a, tag))
                if len(mine) > 4:  # free one, checking nobody wrote on it meanwhile
                    b, t = mine.pop(int(rng.integers(len(mine))))
                    if not (b[::4096] == t).all():
                        errors.append(f"thread {tid}: block of tag {t} overwritten")
                    del b
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))
        with lock:
            live.extend(mine)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    for i, (a, tag) in enumerate(live):
        assert (a[::4096] == tag).all()
        for b, _ in live[i + 1:]:
            assert not np.shares_memory(a, b)
