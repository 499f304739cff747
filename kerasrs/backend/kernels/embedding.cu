// Embedding gradient: out[indices[i], :] += gy[i, :], a scatter-add with atomicAdd (indices may
// repeat). `out` (input_dim, dim) arrives zeroed. One thread per element of gy (n, dim).
// Launcher and NumPy twin: embedding.py beside this file.

template <typename T>
__global__ void embedding_grad(const int* indices, const T* gy, T* out, long long total, int dim,
                               int input_dim) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    const long long i = e / dim;
    const int j = (int)(e - i * dim);
    const int k = indices[i];
    if (k >= 0 && k < input_dim) atomicAdd(out + (long long)k * dim + j, gy[e]);
  }
}
