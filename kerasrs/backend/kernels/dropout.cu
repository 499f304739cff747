// Dropout keep-mask from the counter-based Philox4x32-10 generator (Salmon, Moraes, Dror and
// Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC 2011), so a mask depends only on
// (seed, offset, element index) and the NumPy twin reproduces it bit for bit.
// Launcher and NumPy twin: dropout.py beside this file.
//
// Element e takes 32-bit word e % 4 of philox(counter = (lo(e/4), hi(e/4), lo(offset),
// hi(offset)), key = (lo(seed), hi(seed))). It is kept when (word >> 8) >= threshold, i.e. a
// 24-bit uniform u = (word >> 8) / 2^24 satisfies u >= rate; kept elements get `scale`.

struct kr_philox_state { unsigned int c[4]; };

__device__ __forceinline__ void kr_mulhilo(unsigned int a, unsigned int b, unsigned int* hi,
                                           unsigned int* lo) {
  const unsigned long long p = (unsigned long long)a * b;
  *hi = (unsigned int)(p >> 32);
  *lo = (unsigned int)p;
}

__device__ kr_philox_state kr_philox4x32_10(kr_philox_state x, unsigned int k0, unsigned int k1) {
  for (int round = 0; round < 10; ++round) {
    unsigned int hi0, lo0, hi1, lo1;
    kr_mulhilo(0xD2511F53u, x.c[0], &hi0, &lo0);
    kr_mulhilo(0xCD9E8D57u, x.c[2], &hi1, &lo1);
    kr_philox_state y;
    y.c[0] = hi1 ^ x.c[1] ^ k0;
    y.c[1] = lo1;
    y.c[2] = hi0 ^ x.c[3] ^ k1;
    y.c[3] = lo0;
    x = y;
    k0 += 0x9E3779B9u;  // Weyl sequence bumps of the key
    k1 += 0xBB67AE85u;
  }
  return x;
}

// Raw generator output, one 4-word block per counter; used by the known-answer tests.
__global__ void philox4x32_10(const unsigned int* counters, const unsigned int* keys,
                              unsigned int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  kr_philox_state s;
  for (int w = 0; w < 4; ++w) s.c[w] = counters[4 * i + w];
  s = kr_philox4x32_10(s, keys[2 * i], keys[2 * i + 1]);
  for (int w = 0; w < 4; ++w) out[4 * i + w] = s.c[w];
}

template <typename T>
__global__ void dropout_mask(T* out, long long n, unsigned long long seed,
                             unsigned long long offset, unsigned int threshold, T scale) {
  const long long blocks = (n + 3) / 4;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x; b < blocks; b += stride) {
    kr_philox_state s;
    s.c[0] = (unsigned int)b;
    s.c[1] = (unsigned int)(b >> 32);
    s.c[2] = (unsigned int)offset;
    s.c[3] = (unsigned int)(offset >> 32);
    s = kr_philox4x32_10(s, (unsigned int)seed, (unsigned int)(seed >> 32));
    for (int w = 0; w < 4; ++w) {
      const long long e = 4 * b + w;
      if (e < n) out[e] = (s.c[w] >> 8) >= threshold ? scale : (T)0;
    }
  }
}
