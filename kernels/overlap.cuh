// overlap.cuh: programmatic dependent launch (sm_90 and newer). A kernel
// launched with the overlap attribute (internal/cuda's Context.SetOverlap)
// may start while the kernel before it in the stream is still running. It
// calls grid_wait before it reads anything an earlier kernel wrote and
// before it writes anything: grid_wait returns once the earlier kernel has
// finished and its writes are visible. Only reads of what no kernel writes
// (the weights, the step's positions and sequences, which host copies
// write before the step) may come first. A kernel lets the next one start
// with grid_launch: right after waiting (grid_begin) where it is short, or
// at the end of its blocks, so that the next kernel's blocks do not sit
// waiting on the multiprocessors through a long run (mvq.cu, attention.cu).
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

// grid_begin waits for the kernel ahead, then lets the next kernel start.
static __device__ __forceinline__ void grid_begin() {
  grid_wait();
  grid_launch();
}
