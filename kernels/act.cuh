// act.cuh: the activations of gated feed-forward products, shared by every
// kernel that applies them, so that each computes them to the same bits.
#pragma once

// silu_f is x·sigmoid(x).
static __device__ __forceinline__ float silu_f(float x) { return x / (1.f + expf(-x)); }

// gelu_tanh is GELU in its tanh approximation.
static __device__ __forceinline__ float gelu_tanh(float x) {
  return 0.5f * x * (1.f + tanhf(0.7978845608028654f * x * (1.f + 0.044715f * x * x)));
}

// glu_value is act(g)·u for act 0 (SiLU) or 1 (GELU, tanh).
static __device__ __forceinline__ float glu_value(float g, float u, int act) {
  return (act == 1 ? gelu_tanh(g) : silu_f(g)) * u;
}
