"""CUDA source for a fused group (the GPU twin of `kerasrs.graph.fusion.numba_source`).

The source is a self-contained ``extern "C" __global__`` kernel for ``cupy.RawKernel`` with a
grid-stride loop over the flattened elements, launched with ``(in_0.., out_0.., n)``. The member
expressions are the same text as on the CPU: the preamble defines the functions the templates
use (``maximum`` and ``minimum`` propagate NaN as NumPy's do) and ``float32(x)``/``float64(x)``
as C casts. Only groups without broadcast inputs get a kernel here (the flat form). Members are
named by their place in the group, so equal chains (each parameter's optimizer update) are one
source and one compiled kernel. Nothing in this module imports CuPy: `kerasrs.graph.cuda_launch`
compiles the source with `NVRTC_OPTIONS` through ``cupy.RawKernel`` and launches it; the tests
compile it with NVRTC, which needs no GPU, and run it on the CuPy stand-in.
"""

import hashlib
import re

from kerasrs.graph import fusion

C_TYPES = {"float32": "float", "float64": "double"}
# No contraction of a * b + c into one fused multiply-add: NumPy rounds the product first, and
# replay must give its numbers (NVRTC's defaults already keep division and sqrt IEEE-exact).
NVRTC_OPTIONS = ("--fmad=false",)

PREAMBLE = r"""
#define float32(x) ((float)(x))
#define float64(x) ((double)(x))
#define inf __longlong_as_double(0x7ff0000000000000LL)
#define nan __longlong_as_double(0x7ff8000000000000LL)
template <class T> __device__ __forceinline__ T maximum(T a, T b)
{ return (a > b || a != a) ? a : b; }
template <class T> __device__ __forceinline__ T minimum(T a, T b)
{ return (a < b || a != a) ? a : b; }
template <class T> __device__ __forceinline__ T absolute(T a) { return fabs(a); }
template <class T> __device__ __forceinline__ T where(T c, T a, T b) { return c != 0 ? a : b; }
"""


def cuda_source(graph, group, types):
    """``(source, kernel name, input kinds)`` of the group's RawKernel, or None when the group
    has a broadcast input (no flat form).

    The kernel's parameters: a ``const T*`` per array or scalar input (in ``group.inputs``
    order, weak scalars inlined), a ``T*`` per output, and ``long long n``.
    """
    kinds = fusion.classify_inputs(graph, group, types)
    if "broadcast" in kinds:
        return None
    params, spelled, reads = [], {}, []
    for k, (j, kind) in enumerate(zip(group.inputs, kinds)):
        if kind == "weak":
            spelled[j] = fusion.literal(graph.nodes[j].value)
            continue
        params.append(f"const {C_TYPES[types[j].dtype]}* in_{k}")
        spelled[j] = f"a{k}"
        index = "0" if kind == "scalar" else "i"
        reads.append(f"const {C_TYPES[types[j].dtype]} a{k} = in_{k}[{index}];")
    params += [f"{C_TYPES[types[i].dtype]}* out_{k}" for k, i in enumerate(group.outputs)]
    body = list(reads)
    # members are named by their place in the group, not their node id, so that equal chains
    # (every Adam update of a model) are one source: one kernel, compiled once
    local = {f"t{i}": f"t{k}" for k, i in enumerate(group.members)}
    rename = lambda text: re.sub(r"\bt\d+\b", lambda m: local[m.group(0)], text)
    for i, expression in fusion.member_expressions(graph, group, types, spelled.__getitem__,
                                                   lambda dtype, text: f"{dtype}({text})"):
        body.append(f"const {C_TYPES[types[i].dtype]} {local[f't{i}']} = {rename(expression)};")
    body += [f"out_{k}[i] = {local[f't{i}']};" for k, i in enumerate(group.outputs)]
    digest = hashlib.sha1("\n".join(params + body).encode()).hexdigest()[:12]
    name = f"kerasrs_fused_{digest}"
    lines = [f'extern "C" __global__ void {name}({", ".join(params + ["long long n"])}) {{',
             "    const long long stride = (long long)gridDim.x * blockDim.x;",
             "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; "
             "i += stride) {"]
    lines += ["        " + line for line in body]
    lines += ["    }", "}"]
    return PREAMBLE + "\n".join(lines) + "\n", name, kinds
