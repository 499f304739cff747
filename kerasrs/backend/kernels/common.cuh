// Helpers shared by every kernel file. kerasrs/backend/kernels/cuda.py (`source`) prepends this
// text to each .cu file, after the generated KR_ACT_* activation codes and followed by a #line
// directive, so compiler messages keep the .cu file's own line numbers. It compiles under NVRTC
// and, through tests/cuda/cuda_cpu.h, under g++.
//
// No warp intrinsics anywhere: reductions go through shared memory and __syncthreads(), so the
// same code runs on the CPU emulation, where a block's threads are OS threads.

#define KR_MAX_BLOCK 256  // launchers never use more threads per block than this

// Math overloads, so a kernel templated on T calls the float or double function.
__device__ __forceinline__ float kr_exp(float x) { return expf(x); }
__device__ __forceinline__ double kr_exp(double x) { return exp(x); }
__device__ __forceinline__ float kr_log(float x) { return logf(x); }
__device__ __forceinline__ double kr_log(double x) { return log(x); }
__device__ __forceinline__ float kr_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double kr_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float kr_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double kr_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float kr_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double kr_abs(double x) { return fabs(x); }

// IEEE infinity and quiet NaN from their bit patterns (NVRTC has no math.h macros).
template <typename T> __device__ __forceinline__ T kr_inf() {
  return (T)__longlong_as_double(0x7ff0000000000000LL);
}
template <typename T> __device__ __forceinline__ T kr_nan() {
  return (T)__longlong_as_double(0x7ff8000000000000LL);
}

// Logistic function without overflow: exp of a non-positive number only.
template <typename T> __device__ __forceinline__ T kr_sigmoid(T x) {
  T e = kr_exp(-kr_abs(x));
  return x >= (T)0 ? (T)1 / ((T)1 + e) : e / ((T)1 + e);
}

struct kr_sum_op {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct kr_max_op {
  // NaN-propagating max, like numpy.max: a NaN anywhere in the row makes the result NaN.
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const {
    return (a != a || a > b) ? a : b;
  }
};

// Reduce one value per thread over the whole block (1-D blocks whose size is a power of two).
// Every thread of the block must call it; every thread gets the result. `buf` is a __shared__
// array of at least blockDim.x elements owned by the caller.
template <typename T, typename Op>
__device__ T kr_block_reduce(T v, T* buf, Op op) {
  const unsigned t = threadIdx.x;
  buf[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) buf[t] = op(buf[t], buf[t + s]);
    __syncthreads();
  }
  T r = buf[0];
  __syncthreads();  // buf may be reused by the caller right after
  return r;
}

// Column sums of a 2-D block (blockDim.x columns, blockDim.y row-partials): `v` is this thread's
// partial; thread (x, 0) gets the sum over y. Every thread must call it.
template <typename T>
__device__ T kr_column_reduce(T v, T* buf) {
  const unsigned x = threadIdx.x, y = threadIdx.y, w = blockDim.x;
  buf[y * w + x] = v;
  __syncthreads();
  for (unsigned s = blockDim.y / 2; s > 0; s >>= 1) {
    if (y < s) buf[y * w + x] += buf[(y + s) * w + x];
    __syncthreads();
  }
  T r = buf[x];
  __syncthreads();
  return r;
}

// The activations by code: KR_ACT_* come from the table in kerasrs/backend/kernels/activations.py
// (the NumPy twins and the numba kernels use the same codes).
template <typename T> __device__ __forceinline__ T kr_activate(T x, int act) {
  switch (act) {
    case KR_ACT_RELU: return x < (T)0 ? (T)0 : x;  // NaN passes through, as numpy.maximum(x, 0)
    case KR_ACT_SIGMOID: return kr_sigmoid(x);
    case KR_ACT_TANH: return kr_tanh(x);
    case KR_ACT_HARD_SIGMOID: {  // Keras 3: relu6(x + 3) / 6; NaN passes through, as numpy.clip
      const T v = x + (T)3;
      return (v < (T)0 ? (T)0 : v > (T)6 ? (T)6 : v) * (T)(1.0 / 6.0);
    }
    case KR_ACT_LINEAR:
    default: return x;
  }
}

// The activation's derivative from its output y (relu'(0) = 0, as PyTorch).
template <typename T> __device__ __forceinline__ T kr_activate_grad(T y, int act) {
  switch (act) {
    case KR_ACT_RELU: return y > (T)0 ? (T)1 : (T)0;
    case KR_ACT_SIGMOID: return y * ((T)1 - y);
    case KR_ACT_TANH: return (T)1 - y * y;
    case KR_ACT_HARD_SIGMOID: return y > (T)0 && y < (T)1 ? (T)(1.0 / 6.0) : (T)0;
    case KR_ACT_LINEAR:
    default: return (T)1;
  }
}

// Index of the first element of a grid-stride loop and its stride.
__device__ __forceinline__ long long kr_first() {
  return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long long kr_stride() { return (long long)gridDim.x * blockDim.x; }
