// Bias + activation, the epilogue of a Dense/conv GEMM, on channels-last rows x (n, c).
// Launchers and NumPy twins: bias_act.py beside this file.

// y = act(x + bias); y may be x itself (in place: each element is read, then written, by one
// thread).
template <typename T>
__global__ void bias_act(const T* x, const T* bias, T* y, long long total, int c, int has_bias,
                         int act) {
  for (long long e = kr_first(); e < total; e += kr_stride()) {
    const T v = has_bias ? x[e] + bias[e % c] : x[e];
    y[e] = kr_activate(v, act);
  }
}

// gx = gy * act'(y) (derivative from the output) and, if need_bias, gbias += column sums of gx.
// Block (32 columns, 8 row lanes); grid (column tiles, row slices). Each thread sums its rows,
// the block reduces over its 8 lanes in shared memory, and one atomicAdd per column and block
// adds the slice's sum into gbias, which arrives zeroed.
template <typename T>
__global__ void bias_act_grad(const T* y, const T* gy, T* gx, T* gbias, int n, int c, int act,
                              int need_bias) {
  __shared__ T buf[KR_MAX_BLOCK];
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  T acc = (T)0;
  if (col < c) {
    for (long long r = (long long)blockIdx.y * blockDim.y + threadIdx.y; r < n;
         r += (long long)gridDim.y * blockDim.y) {
      const long long e = r * c + col;
      const T g = gy[e] * kr_activate_grad(y[e], act);
      gx[e] = g;
      acc += g;
    }
  }
  if (need_bias) {  // the same for the whole block, so every thread reaches the barriers
    acc = kr_column_reduce(acc, buf);
    if (threadIdx.y == 0 && col < c) atomicAdd(gbias + col, acc);
  }
}
