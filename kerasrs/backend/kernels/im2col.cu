// im2col / col2im for channels-last convolutions with up to three spatial axes (1-D and 2-D
// inputs pass size-1 axes with window 1, stride 1, dilation 1 and no padding).
// Launchers and NumPy twins: im2col.py beside this file.
//
// x is (n, d1, d2, d3, c); cols is (n, o1, o2, o3, k1, k2, k3, c) flat, i.e. row (b, o) holds
// the window at output position o, window positions row-major, channels fastest. Input index
// along axis a of window position q at output position r: r * s_a - p_a + q * dl_a (p_a is the
// "before" padding; outside [0, d_a) reads zero).

// Row-major flat index of (a1, a2, a3) in an (n1, n2, n3) box, and its inverse: both kernels
// address the window, output and input positions this way.
__device__ __forceinline__ long long kr_ravel3(int a1, int a2, int a3, int n2, int n3) {
  return ((long long)a1 * n2 + a2) * n3 + a3;
}

__device__ __forceinline__ void kr_unravel3(long long f, int n2, int n3, int* a1, int* a2,
                                            int* a3) {
  *a3 = (int)(f % n3);
  *a2 = (int)(f / n3 % n2);
  *a1 = (int)(f / n3 / n2);
}

template <typename T>
__global__ void im2col(const T* x, T* cols, long long total, int d1, int d2, int d3, int c,
                       int k1, int k2, int k3, int s1, int s2, int s3, int dl1, int dl2, int dl3,
                       int p1, int p2, int p3, int o1, int o2, int o3) {
  const long long K = (long long)k1 * k2 * k3, O = (long long)o1 * o2 * o3,
                  D = (long long)d1 * d2 * d3;
  for (long long e = kr_first(); e < total; e += kr_stride()) {
    long long t = e;
    const int ch = (int)(t % c); t /= c;
    const long long kk = t % K; t /= K;
    const long long oo = t % O;
    const long long b = t / O;
    int q1, q2, q3, r1, r2, r3;
    kr_unravel3(kk, k2, k3, &q1, &q2, &q3);
    kr_unravel3(oo, o2, o3, &r1, &r2, &r3);
    const int i1 = r1 * s1 - p1 + q1 * dl1, i2 = r2 * s2 - p2 + q2 * dl2,
              i3 = r3 * s3 - p3 + q3 * dl3;
    const bool inside = i1 >= 0 && i1 < d1 && i2 >= 0 && i2 < d2 && i3 >= 0 && i3 < d3;
    cols[e] = inside ? x[(b * D + kr_ravel3(i1, i2, i3, d2, d3)) * c + ch] : (T)0;
  }
}

// The adjoint, as a gather: each x element sums the column entries that read it, so no two
// threads write the same element (deterministic, no atomics).
template <typename T>
__global__ void col2im(const T* cols, T* x, long long total, int d1, int d2, int d3, int c,
                       int k1, int k2, int k3, int s1, int s2, int s3, int dl1, int dl2, int dl3,
                       int p1, int p2, int p3, int o1, int o2, int o3) {
  const long long K = (long long)k1 * k2 * k3, O = (long long)o1 * o2 * o3,
                  D = (long long)d1 * d2 * d3;
  for (long long e = kr_first(); e < total; e += kr_stride()) {
    long long t = e;
    const int ch = (int)(t % c); t /= c;
    const long long b = t / D;
    int i1, i2, i3;
    kr_unravel3(t % D, d2, d3, &i1, &i2, &i3);
    T sum = (T)0;
    for (int q1 = 0; q1 < k1; ++q1) {
      const int t1 = i1 + p1 - q1 * dl1;
      if (t1 < 0 || t1 % s1 || t1 / s1 >= o1) continue;
      for (int q2 = 0; q2 < k2; ++q2) {
        const int t2 = i2 + p2 - q2 * dl2;
        if (t2 < 0 || t2 % s2 || t2 / s2 >= o2) continue;
        for (int q3 = 0; q3 < k3; ++q3) {
          const int t3 = i3 + p3 - q3 * dl3;
          if (t3 < 0 || t3 % s3 || t3 / s3 >= o3) continue;
          const long long oo = kr_ravel3(t1 / s1, t2 / s2, t3 / s3, o2, o3);
          const long long kk = kr_ravel3(q1, q2, q3, k2, k3);
          sum += cols[((b * O + oo) * K + kk) * c + ch];
        }
      }
    }
    x[e] = sum;
  }
}
