"""The stand-in's ``RawKernel(code, name)`` (the kernels kerasrs.graph generates) and its stream
capture (capture.py): capturing runs nothing visible, a launch does the work on the same
memory every time, a host copy while capturing invalidates the capture."""

import numpy as np
import pytest

from kerasrs import graph
from kerasrs.graph import cuda_codegen


def _fused_source(dtype="float32"):
    g = graph.parse(f"""graph {{
      %0 = input {{name='x'}} : {dtype}[5,3]
      %1 = input {{name='s'}} : {dtype}[]
      %2 = multiply(%0, %1) : {dtype}[5,3]
      %3 = constant {{value=2.0}} : float64[]
      %4 = add(%2, %3) : {dtype}[5,3]
      %5 = sqrt(%4) : {dtype}[5,3]
      output 'y' = %5
      output 'z' = %2
    }}""")
    types = [n.type for n in g.nodes]
    (group,) = graph.fusion.groups(g, types, {2, 4, 5}, g.roots())
    return cuda_codegen.cuda_source(g, group, types)


def test_raw_kernel_from_generated_source_runs_it(cupy_standin):
    cp = cupy_standin
    source, name, kinds = _fused_source()
    assert kinds == ["full", "scalar", "weak"]
    kernel = cp.RawKernel(source, name, options=cuda_codegen.NVRTC_OPTIONS)
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    dx, ds = cp.asarray(x), cp.asarray(np.float32(0.5).reshape(1))
    y, z = cp.empty((5, 3), np.float32), cp.empty((5, 3), np.float32)
    kernel((2,), (4,), (dx, ds, z, y, np.int64(15)))  # outputs in member order; 8 threads wrap
    np.testing.assert_allclose(y.get(), np.sqrt(x * 0.5 + 2), rtol=1e-6)
    np.testing.assert_array_equal(z.get(), x * np.float32(0.5))
    assert cp.launched[name] == 1
    with pytest.raises(TypeError, match="argument 0"):
        kernel((1,), (32,), (x, ds, z, y, np.int64(15)))  # a host array
    with pytest.raises(TypeError, match="parameters"):
        kernel((1,), (32,), (dx, ds, z, y))  # n missing
    with pytest.raises(TypeError, match="options"):
        cp.RawKernel(source, name, options=["--fmad=false"])


def test_equal_chains_share_one_source():
    """Members are named by their place in the group: the source does not depend on node ids."""
    first = _fused_source()
    g = graph.parse("""graph {
      %0 = input {name='u'} : float32[2,2]
      %1 = input {name='x'} : float32[5,3]
      %2 = input {name='s'} : float32[]
      %3 = multiply(%1, %2) : float32[5,3]
      %4 = constant {value=2.0} : float64[]
      %5 = add(%3, %4) : float32[5,3]
      %6 = sqrt(%5) : float32[5,3]
      output 'y' = %6
      output 'z' = %3
      output 'u' = %0
    }""")
    types = [n.type for n in g.nodes]
    (group,) = graph.fusion.groups(g, types, {3, 5, 6}, g.roots())
    assert cuda_codegen.cuda_source(g, group, types) == first


def test_capture_runs_nothing_and_a_launch_runs_it_again(cupy_standin):
    cp = cupy_standin
    a = cp.asarray(np.array([1.0, 2.0, 3.0]))
    source, name, _ = _fused_source("float64")
    kernel = cp.RawKernel(source, name)
    x = cp.asarray(np.ones((5, 3)))
    s = cp.asarray(np.array([3.0]))
    y, z = cp.empty((5, 3), np.float64), cp.empty((5, 3), np.float64)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        assert stream.is_capturing()
        b = a * 2  # new memory, written by the graph
        a += 1  # an update in place
        kernel((1,), (32,), (x, s, z, y, np.int64(15)))
        x *= 2
        g = stream.end_capture()
    assert not stream.is_capturing()
    np.testing.assert_array_equal(a.get(), [1, 2, 3])  # nothing ran
    assert np.isnan(b.get()).all() and np.isnan(y.get()).all()
    np.testing.assert_array_equal(x.get(), np.ones((5, 3)))
    g.launch()
    np.testing.assert_array_equal(a.get(), [2, 3, 4])
    np.testing.assert_array_equal(b.get(), [2, 4, 6])
    np.testing.assert_allclose(y.get(), np.sqrt(np.full((5, 3), 5.0)))
    s[...] = cp.asarray(np.array([0.5]))  # refill an input in place, launch again
    g.launch()
    np.testing.assert_array_equal(a.get(), [3, 4, 5])
    np.testing.assert_array_equal(b.get(), [4, 6, 8])  # from a as the launch found it
    np.testing.assert_allclose(y.get(), np.sqrt(np.full((5, 3), 2 * 0.5 + 2)))
    np.testing.assert_array_equal(x.get(), np.full((5, 3), 4.0))
    assert cp.capture_stats["graph_launches"] == 2


@pytest.mark.parametrize("copy", ["get", "float", "set", "asarray"])
def test_a_host_copy_while_capturing_invalidates_the_capture(cupy_standin, copy):
    cp = cupy_standin
    a = cp.asarray(np.array([1.0, 2.0]))
    stream = cp.cuda.Stream(non_blocking=True)
    stream.begin_capture()
    a += 1
    with pytest.raises(RuntimeError, match="capturing"):
        if copy == "get":
            a.get()
        elif copy == "float":
            float(a[0])
        elif copy == "set":
            a.set(np.zeros(2))
        else:
            cp.asarray(np.zeros(2))
    with pytest.raises(RuntimeError, match="invalidated"):
        stream.end_capture()
    np.testing.assert_array_equal(a.get(), [1.0, 2.0])  # put back as it was
    with pytest.raises(RuntimeError, match="not capturing"):
        stream.end_capture()
