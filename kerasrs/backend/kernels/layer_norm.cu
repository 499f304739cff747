// Layer normalization over the last axis of x (n, d) (Ba, Kiros and Hinton 2016), statistics in
// T (float32 for float32 inputs, float64 for float64). One block per row; the row sums are
// shared-memory block reductions. Launchers and NumPy twins: layer_norm.py beside this file.

template <typename T>
__global__ void layer_norm_fwd(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd,
                               int n, int d, T epsilon, int has_gamma, int has_beta) {
  __shared__ T buf[KR_MAX_BLOCK];
  const long long row = blockIdx.x;
  if (row >= n) return;  // (block-uniform) a grid larger than n writes nothing
  const T* xr = x + row * d;
  T s = (T)0;
  for (int j = threadIdx.x; j < d; j += blockDim.x) s += xr[j];
  const T mu = kr_block_reduce(s, buf, kr_sum_op()) / (T)d;
  T q = (T)0;  // two passes: the variance never suffers E[x^2] - E[x]^2 cancellation
  for (int j = threadIdx.x; j < d; j += blockDim.x) q += (xr[j] - mu) * (xr[j] - mu);
  const T rs = (T)1 / kr_sqrt(kr_block_reduce(q, buf, kr_sum_op()) / (T)d + epsilon);
  for (int j = threadIdx.x; j < d; j += blockDim.x) {
    T v = (xr[j] - mu) * rs;
    if (has_gamma) v *= gamma[j];
    if (has_beta) v += beta[j];
    y[row * d + j] = v;
  }
  if (threadIdx.x == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
}

// gx = rstd * (g - mean_j(g) - xhat * mean_j(g * xhat)), g = gy * gamma, per row.
template <typename T>
__global__ void layer_norm_bwd(const T* gy, const T* x, const T* gamma, const T* mean,
                               const T* rstd, T* gx, int n, int d, int has_gamma) {
  __shared__ T buf[KR_MAX_BLOCK];
  const long long row = blockIdx.x;
  if (row >= n) return;  // (block-uniform) a grid larger than n writes nothing
  const T mu = mean[row], rs = rstd[row];
  T sg = (T)0, sgx = (T)0;
  for (int j = threadIdx.x; j < d; j += blockDim.x) {
    const T g = has_gamma ? gy[row * d + j] * gamma[j] : gy[row * d + j];
    sg += g;
    sgx += g * (x[row * d + j] - mu) * rs;
  }
  const T mg = kr_block_reduce(sg, buf, kr_sum_op()) / (T)d;
  const T mgx = kr_block_reduce(sgx, buf, kr_sum_op()) / (T)d;
  for (int j = threadIdx.x; j < d; j += blockDim.x) {
    const T g = has_gamma ? gy[row * d + j] * gamma[j] : gy[row * d + j];
    const T xhat = (x[row * d + j] - mu) * rs;
    gx[row * d + j] = rs * (g - mg - xhat * mgx);
  }
}

// ggamma += column sums of gy * xhat, gbeta += column sums of gy (both arrive zeroed); blocks of
// (32 columns, 8 row lanes) over a grid of (column tiles, row slices), as bias_act_grad.
template <typename T>
__global__ void layer_norm_bwd_params(const T* gy, const T* x, const T* mean, const T* rstd,
                                      T* ggamma, T* gbeta, int n, int d) {
  __shared__ T buf[KR_MAX_BLOCK];
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  T sgamma = (T)0, sbeta = (T)0;
  if (col < d) {
    for (long long r = (long long)blockIdx.y * blockDim.y + threadIdx.y; r < n;
         r += (long long)gridDim.y * blockDim.y) {
      const T g = gy[r * d + col];
      sgamma += g * (x[r * d + col] - mean[r]) * rstd[r];
      sbeta += g;
    }
  }
  sgamma = kr_column_reduce(sgamma, buf);
  sbeta = kr_column_reduce(sbeta, buf);
  if (threadIdx.y == 0 && col < d) {
    atomicAdd(ggamma + col, sgamma);
    atomicAdd(gbeta + col, sbeta);
  }
}
