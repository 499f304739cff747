// Multi-tensor optimizer steps: one launch updates every parameter of a model. Each block owns a
// chunk of one tensor, found through tables: ptrs_* (one device address per tensor), sizes
// (elements per tensor), chunk_tensor / chunk_start (per block). Keras 3's update rules, term for
// term as the twins (kernels/optimizer.py) so float64 results agree to rounding. Weight decay is
// applied by the optimizer before the step; alpha carries Adam's bias correction.

// The tensor this block updates, and its element range [start, end) in that tensor.
__device__ __forceinline__ unsigned long long kr_block_chunk(
    const unsigned long long* sizes, const unsigned long long* chunk_tensor,
    const unsigned long long* chunk_start, long long chunk, long long* start, long long* end) {
  const unsigned long long k = chunk_tensor[blockIdx.x];
  *start = (long long)chunk_start[blockIdx.x];
  *end = *start + chunk;
  if (*end > (long long)sizes[k]) *end = (long long)sizes[k];
  return k;
}

template <typename T>
__global__ void adam_update(T* const* params, const T* const* grads, T* const* ms, T* const* vs,
                            T* const* v_hats, const unsigned long long* sizes,
                            const unsigned long long* chunk_tensor,
                            const unsigned long long* chunk_start, long long chunk,
                            T one_minus_beta_1, T one_minus_beta_2, T epsilon, T alpha,
                            int amsgrad) {
  long long start, end;
  const unsigned long long k =
      kr_block_chunk(sizes, chunk_tensor, chunk_start, chunk, &start, &end);
  T* w = params[k];
  const T* g = grads[k];
  T* m = ms[k];
  T* v = vs[k];
  for (long long i = start + threadIdx.x; i < end; i += blockDim.x) {
    const T gi = g[i];
    const T mi = m[i] + one_minus_beta_1 * (gi - m[i]);
    T vi = v[i] + one_minus_beta_2 * (gi * gi - v[i]);
    m[i] = mi;
    v[i] = vi;
    if (amsgrad) {
      const T vh = v_hats[k][i] > vi ? v_hats[k][i] : vi;
      v_hats[k][i] = vh;
      vi = vh;
    }
    w[i] -= alpha * mi / (kr_sqrt(vi) + epsilon);
  }
}

template <typename T>
__global__ void sgd_update(T* const* params, const T* const* grads, T* const* momentums,
                           const unsigned long long* sizes, const unsigned long long* chunk_tensor,
                           const unsigned long long* chunk_start, long long chunk, T lr,
                           T momentum, int nesterov) {
  long long start, end;
  const unsigned long long k =
      kr_block_chunk(sizes, chunk_tensor, chunk_start, chunk, &start, &end);
  T* w = params[k];
  const T* g = grads[k];
  for (long long i = start + threadIdx.x; i < end; i += blockDim.x) {
    const T step = lr * g[i];
    if (momentum == (T)0) {
      w[i] -= step;
      continue;
    }
    const T vi = momentums[k][i] * momentum - step;
    momentums[k][i] = vi;
    w[i] += nesterov ? momentum * vi - step : vi;
  }
}
