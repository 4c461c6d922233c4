// overlap.cuh: programmatic dependent launch (sm_90 and newer). A kernel
// launched with the overlap attribute (internal/cuda's Context.SetOverlap)
// may start while the kernel before it in the stream is still running. It
// calls grid_begin before it reads anything an earlier kernel wrote and
// before it writes anything: grid_begin waits until the earlier kernel has
// finished and its writes are visible, then lets the next kernel start in
// turn. Only reads of what no kernel writes (the weights) may come first.
// On older devices, and in a launch without the attribute, both are no-ops.
#pragma once

// grid_wait waits until the kernel ahead has finished and its writes are
// visible.
static __device__ __forceinline__ void grid_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// grid_launch lets the next kernel start once every block of this one has
// called it (or exited).
static __device__ __forceinline__ void grid_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

static __device__ __forceinline__ void grid_begin() {
  grid_wait();
  grid_launch();
}
