// Fused softmax cross-entropy, forward and backward; one block per row of `logits` (n, c).
// Launchers and NumPy twins: softmax_ce.py beside this file.
//
// Forward: with m = max(x) and ls = log(sum(exp(x - m))) (log-sum-exp, each a block reduction):
// probs = exp((x - m) - ls), loss = ls - (x[label] - m) (sparse) or sum(t * (ls - (x - m)))
// (dense).
// Backward: dloss/dx = gloss * (sum(t) * probs - t), with t one-hot for sparse labels.

// Row statistics shared by both label kinds: returns log(sum(exp(x - m))) and sets *m to the
// row max; writes probs. Losses are formed from the shifted logits x - m, so huge logits keep
// their precision (loss of [1e8, 1e8] against either class is ln 2, not 1e8 + ln 2 - 1e8 = 0).
template <typename T>
__device__ T kr_row_softmax(const T* x, T* probs, int c, T* buf, T* m_out) {
  T m = -kr_inf<T>();
  for (int j = threadIdx.x; j < c; j += blockDim.x) m = kr_max_op()(m, x[j]);
  m = kr_block_reduce(m, buf, kr_max_op());
  if (m == -kr_inf<T>()) m = (T)0;  // all -inf: keep exp finite, log(sum) becomes -inf below
  T s = (T)0;
  for (int j = threadIdx.x; j < c; j += blockDim.x) s += kr_exp(x[j] - m);
  const T ls = kr_log(kr_block_reduce(s, buf, kr_sum_op()));
  for (int j = threadIdx.x; j < c; j += blockDim.x) probs[j] = kr_exp((x[j] - m) - ls);
  *m_out = m;
  return ls;
}

template <typename T>
__global__ void softmax_ce_sparse_fwd(const T* logits, const int* labels, T* loss, T* probs,
                                      int n, int c) {
  __shared__ T buf[KR_MAX_BLOCK];
  const long long row = blockIdx.x;
  if (row >= n) return;  // (block-uniform) a grid larger than n writes nothing
  T m;
  const T ls = kr_row_softmax(logits + row * c, probs + row * c, c, buf, &m);
  if (threadIdx.x == 0) {
    const int k = labels[row];
    // An id outside [0, c) gives NaN rather than a read out of bounds (the op checks ids first).
    loss[row] = (k >= 0 && k < c) ? ls - (logits[row * c + k] - m) : kr_nan<T>();
  }
}

template <typename T>
__global__ void softmax_ce_dense_fwd(const T* logits, const T* labels, T* loss, T* probs,
                                     int n, int c) {
  __shared__ T buf[KR_MAX_BLOCK];
  const long long row = blockIdx.x;
  if (row >= n) return;  // (block-uniform) a grid larger than n writes nothing
  const T* x = logits + row * c;
  const T* t = labels + row * c;
  T m;
  const T ls = kr_row_softmax(x, probs + row * c, c, buf, &m);
  T s = (T)0;
  for (int j = threadIdx.x; j < c; j += blockDim.x) s += t[j] * (ls - (x[j] - m));
  s = kr_block_reduce(s, buf, kr_sum_op());
  if (threadIdx.x == 0) loss[row] = s;
}

template <typename T>
__global__ void softmax_ce_sparse_bwd(const T* probs, const int* labels, const T* gloss,
                                      T* glogits, int n, int c) {
  const long long row = blockIdx.x;
  if (row >= n) return;  // (block-uniform) a grid larger than n writes nothing
  const T g = gloss[row];
  const int k = labels[row];
  for (int j = threadIdx.x; j < c; j += blockDim.x)
    glogits[row * c + j] = g * (probs[row * c + j] - (j == k ? (T)1 : (T)0));
}

template <typename T>
__global__ void softmax_ce_dense_bwd(const T* probs, const T* labels, const T* gloss,
                                     T* glogits, int n, int c) {
  __shared__ T buf[KR_MAX_BLOCK];
  const long long row = blockIdx.x;
  if (row >= n) return;  // (block-uniform) a grid larger than n writes nothing
  const T* t = labels + row * c;
  T s = (T)0;
  for (int j = threadIdx.x; j < c; j += blockDim.x) s += t[j];
  s = kr_block_reduce(s, buf, kr_sum_op());
  const T g = gloss[row];
  for (int j = threadIdx.x; j < c; j += blockDim.x)
    glogits[row * c + j] = g * (s * probs[row * c + j] - t[j]);
}
