// Max pooling over channels-last inputs with up to three spatial axes (see im2col.cu for the
// layout): y (n, o1, o2, o3, c) and argmax, the winner's flat index into x[b] (int32).
// Launchers and NumPy twins: max_pool.py beside this file.
//
// Padding never wins (only in-bounds elements are compared); ties go to the first window
// position in row-major order (strict >), a NaN beats any number (the window's first NaN), as
// the twin. A window with no in-bounds element gives -inf and argmax -1 (no gradient).

template <typename T>
__global__ void max_pool(const T* x, T* y, int* argmax, long long total, int d1, int d2, int d3,
                         int c, int k1, int k2, int k3, int s1, int s2, int s3, int p1, int p2,
                         int p3, int o1, int o2, int o3) {
  for (long long e = kr_first(); e < total; e += kr_stride()) {
    long long t = e;
    const int ch = (int)(t % c); t /= c;
    const int r3 = (int)(t % o3); t /= o3;
    const int r2 = (int)(t % o2); t /= o2;
    const int r1 = (int)(t % o1);
    const long long b = t / o1;
    const T* xb = x + b * d1 * d2 * d3 * c;
    T best = -kr_inf<T>();
    int arg = -1;
    for (int q1 = 0; q1 < k1; ++q1) {
      const int i1 = r1 * s1 - p1 + q1;
      if (i1 < 0 || i1 >= d1) continue;
      for (int q2 = 0; q2 < k2; ++q2) {
        const int i2 = r2 * s2 - p2 + q2;
        if (i2 < 0 || i2 >= d2) continue;
        for (int q3 = 0; q3 < k3; ++q3) {
          const int i3 = r3 * s3 - p3 + q3;
          if (i3 < 0 || i3 >= d3) continue;
          const int idx = ((i1 * d2 + i2) * d3 + i3) * c + ch;
          const T v = xb[idx];
          if (arg < 0 || v > best || (v != v && best == best)) {
            best = v;
            arg = idx;
          }
        }
      }
    }
    y[e] = best;
    argmax[e] = arg;
  }
}

// gx[b, argmax[e]] += gy[e] (argmax -1: nothing); overlapping windows may share a winner, hence
// atomicAdd. gx arrives zeroed. per_out / per_in: elements per sample of gy / gx.
template <typename T>
__global__ void max_pool_grad(const T* gy, const int* argmax, T* gx, long long total,
                              long long per_out, long long per_in) {
  for (long long e = kr_first(); e < total; e += kr_stride())
    if (argmax[e] >= 0) atomicAdd(gx + (e / per_out) * per_in + argmax[e], gy[e]);
}
