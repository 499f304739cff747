// Gate arithmetic of one LSTM / GRU step, elementwise over (n, units); the matrix products stay
// with the BLAS. Keras gate order: LSTM [i, f, c~, o]; GRU [z, r, h] with reset_after=True.
// Activation codes KR_ACT_* (act = the cell activation, ract = the recurrent one).
// Launchers and NumPy twins: rnn_gates.py beside this file.

// z (n, 4u) in: pre-activations; out: activated gates. h, c, tc = act(c) out (n, u).
template <typename T>
__global__ void lstm_gates(T* z, const T* c_prev, T* h, T* c, T* tc, int n, int u, int act,
                           int ract) {
  const long long total = (long long)n * u;
  for (long long e = kr_first(); e < total; e += kr_stride()) {
    const long long row = e / u, j = e - row * u;
    T* zr = z + row * 4 * u;
    const T i = kr_activate(zr[j], ract), f = kr_activate(zr[u + j], ract),
            g = kr_activate(zr[2 * u + j], act), o = kr_activate(zr[3 * u + j], ract);
    zr[j] = i;
    zr[u + j] = f;
    zr[2 * u + j] = g;
    zr[3 * u + j] = o;
    const T ce = f * c_prev[e] + i * g;
    const T t = kr_activate(ce, act);
    c[e] = ce;
    tc[e] = t;
    h[e] = o * t;
  }
}

template <typename T>
__global__ void lstm_gates_grad(const T* gates, const T* c_prev, const T* tc, const T* dh,
                                const T* dc, T* dz, T* dc_prev, int n, int u, int act,
                                int ract) {
  const long long total = (long long)n * u;
  for (long long e = kr_first(); e < total; e += kr_stride()) {
    const long long row = e / u, j = e - row * u;
    const T* gr = gates + row * 4 * u;
    const T i = gr[j], f = gr[u + j], g = gr[2 * u + j], o = gr[3 * u + j];
    const T dct = dc[e] + dh[e] * o * kr_activate_grad(tc[e], act);
    T* dzr = dz + row * 4 * u;
    dzr[j] = dct * g * kr_activate_grad(i, ract);
    dzr[u + j] = dct * c_prev[e] * kr_activate_grad(f, ract);
    dzr[2 * u + j] = dct * i * kr_activate_grad(g, act);
    dzr[3 * u + j] = dh[e] * tc[e] * kr_activate_grad(o, ract);
    dc_prev[e] = dct * f;
  }
}

// xz (n, 3u) in: input projection; out: activated gates [z, r, hh]. hz (n, 3u) read only.
template <typename T>
__global__ void gru_gates(T* xz, const T* hz, const T* h_prev, T* h, int n, int u, int act,
                          int ract) {
  const long long total = (long long)n * u;
  for (long long e = kr_first(); e < total; e += kr_stride()) {
    const long long row = e / u, j = e - row * u;
    T* xr = xz + row * 3 * u;
    const T* hr = hz + row * 3 * u;
    const T z = kr_activate(xr[j] + hr[j], ract);
    const T r = kr_activate(xr[u + j] + hr[u + j], ract);
    const T hh = kr_activate(xr[2 * u + j] + r * hr[2 * u + j], act);
    xr[j] = z;
    xr[u + j] = r;
    xr[2 * u + j] = hh;
    h[e] = z * h_prev[e] + ((T)1 - z) * hh;
  }
}

template <typename T>
__global__ void gru_gates_grad(const T* gates, const T* hz, const T* h_prev, const T* dh,
                               T* dxz, T* dhz, T* dh_prev, int n, int u, int act, int ract) {
  const long long total = (long long)n * u;
  for (long long e = kr_first(); e < total; e += kr_stride()) {
    const long long row = e / u, j = e - row * u;
    const T* gr = gates + row * 3 * u;
    const T z = gr[j], r = gr[u + j], hh = gr[2 * u + j];
    const T dhh = dh[e] * ((T)1 - z) * kr_activate_grad(hh, act);
    const T dzz = dh[e] * (h_prev[e] - hh) * kr_activate_grad(z, ract);
    const T dr = dhh * hz[row * 3 * u + 2 * u + j] * kr_activate_grad(r, ract);
    T* dx = dxz + row * 3 * u;
    T* dhr = dhz + row * 3 * u;
    dx[j] = dzz;
    dx[u + j] = dr;
    dx[2 * u + j] = dhh;
    dhr[j] = dzz;
    dhr[u + j] = dr;
    dhr[2 * u + j] = dhh * r;
    dh_prev[e] = dh[e] * z;
  }
}
