#!/usr/bin/env bash
# One prepared run for a lent GPU machine (CuPy 14 for CUDA 13, PyTorch, h5py, tqdm, ml_dtypes,
# pytest; it installs nothing): the gpu tests with --gpu (a skip is a failure), then the kernel,
# training and graph-replay benchmarks. About 5 minutes; each part has its own time limit
# (240 + 75 + 90 + 60 s, plus collection) so the whole stays under 8.
# Usage: bash benchmarks/gpu_check.sh   (PYTHON=... to pick the interpreter)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
"$PY" -c "import cupy, torch; print('cupy', cupy.__version__, 'cuda runtime',
cupy.cuda.runtime.runtimeGetVersion(), 'torch', torch.__version__)"

# Test modules that cannot be collected here (a test-only import such as hypothesis or Pillow
# is not on the machine) are left out, and listed.
ignore=()
for f in $("$PY" -m pytest --collect-only -q -p no:cacheprovider tests 2>&1 \
           | sed -n 's/^ERROR \(tests\/[^ ]*\.py\).*/\1/p' | sort -u); do
    ignore+=(--ignore "$f")
done
[ ${#ignore[@]} -gt 0 ] && echo "not collectable here, left out: ${ignore[*]}"

echo "== pytest -m gpu --gpu"
timeout 240 "$PY" -m pytest -q -m gpu --gpu -p no:cacheprovider ${ignore[@]+"${ignore[@]}"} tests 2>&1 | tail -40
tests_rc=${PIPESTATUS[0]}

echo "== fused kernels vs their CuPy compositions"
timeout 75 "$PY" benchmarks/gpu_kernels.py --repeat 20
echo "== training steps vs PyTorch eager on the same GPU"
timeout 90 "$PY" benchmarks/gpu_train.py --samples 7680 --rounds 2
echo "== graph replay (fused RawKernels) and its CUDA-graph capture vs eager, CuPy backend"
timeout 60 "$PY" benchmarks/gpu_replay.py --models mlp lstm --steps 20 --rounds 3
echo "pytest exit code: $tests_rc"
exit "$tests_rc"
