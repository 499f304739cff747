// Runs CUDA kernel sources on the CPU with g++ -std=c++20, for the tests (no GPU needed).
//
// A launch runs the grid's blocks one after another; a block's threads are OS threads that meet
// at a std::barrier in __syncthreads(). Because only one block runs at a time, a function-local
// `static` is exactly a block's shared memory, which is what __shared__ becomes. A thread that
// returns leaves the barrier (arrive_and_drop), as an exited thread does on the GPU. atomicAdd is
// std::atomic_ref::fetch_add. Warp intrinsics (__shfl_*) are deliberately absent: the kernels
// reduce through shared memory only.
//
// Kernels are called by name through kr_launch_by_name(name, grid, block, args), where args[i]
// points at the i-th argument's value (CuPy's RawKernel convention); kr_signature(name) gives the
// parameter types ("pf4" = float*, "i4" = int, ...) so the Python side checks every argument.
#pragma once
#include <math.h>

#include <atomic>
#include <barrier>
#include <bit>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static

struct dim3 {
  unsigned int x = 1, y = 1, z = 1;
};

inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
inline thread_local std::barrier<>* kr_block_barrier = nullptr;

inline void __syncthreads() { kr_block_barrier->arrive_and_wait(); }

inline double __longlong_as_double(long long v) { return std::bit_cast<double>(v); }

template <typename T>
inline T atomicAdd(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_add(value);
}

template <typename K, typename... A>
void kr_launch(K kernel, dim3 grid, dim3 block, A... args) {
  gridDim = grid;
  blockDim = block;
  const unsigned nt = block.x * block.y * block.z;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        std::barrier<> bar(nt);
        std::vector<std::thread> threads;
        threads.reserve(nt);
        for (unsigned t = 0; t < nt; ++t)
          threads.emplace_back([&, t] {
            threadIdx = {t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
            blockIdx = {bx, by, bz};
            kr_block_barrier = &bar;
            kernel(args...);
            bar.arrive_and_drop();
          });
        for (auto& th : threads) th.join();
      }
}

// -- parameter type codes, numpy style: kind letter + size, "p" per level of pointer ----------
template <typename T> struct kr_code;
template <> struct kr_code<float> { static std::string get() { return "f4"; } };
template <> struct kr_code<double> { static std::string get() { return "f8"; } };
template <> struct kr_code<int> { static std::string get() { return "i4"; } };
template <> struct kr_code<unsigned int> { static std::string get() { return "u4"; } };
template <> struct kr_code<long long> { static std::string get() { return "i8"; } };
template <> struct kr_code<unsigned long long> { static std::string get() { return "u8"; } };
template <typename T> struct kr_code<T*> {
  static std::string get() { return "p" + kr_code<std::remove_cv_t<T>>::get(); }
};

struct kr_entry {
  std::string signature;
  void (*call)(void* kernel, dim3, dim3, void**);
  void* kernel;
};

inline std::map<std::string, kr_entry>& kr_registry() {
  static std::map<std::string, kr_entry> r;
  return r;
}

template <typename... A, std::size_t... I>
void kr_call(void* kernel, dim3 g, dim3 b, void** args, std::index_sequence<I...>) {
  auto k = reinterpret_cast<void (*)(A...)>(kernel);
  kr_launch(k, g, b, *static_cast<std::remove_cv_t<A>*>(args[I])...);
}

template <typename... A>
int kr_register(const char* name, void (*kernel)(A...)) {
  std::string sig;
  ((sig += kr_code<std::remove_cv_t<A>>::get() + ","), ...);
  kr_registry()[name] = {sig, [](void* k, dim3 g, dim3 b, void** a) {
                           kr_call<A...>(k, g, b, a, std::index_sequence_for<A...>{});
                         }, reinterpret_cast<void*>(kernel)};
  return 0;
}

#define KR_EXPORT extern "C" __attribute__((visibility("default")))

KR_EXPORT const char* kr_signature(const char* name) {
  auto it = kr_registry().find(name);
  return it == kr_registry().end() ? nullptr : it->second.signature.c_str();
}

KR_EXPORT int kr_launch_by_name(const char* name, unsigned gx, unsigned gy, unsigned gz,
                                unsigned bx, unsigned by, unsigned bz, void** args) {
  auto it = kr_registry().find(name);
  if (it == kr_registry().end()) return 1;
  it->second.call(it->second.kernel, dim3{gx, gy, gz}, dim3{bx, by, bz}, args);
  return 0;
}
