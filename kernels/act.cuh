// act.cuh: the activation of gated feed-forward products, shared by every
// kernel that applies it, so that each computes it to the same bits.
#pragma once

// glu_value is act(g)·u for act 0 (SiLU: g·sigmoid(g)) or 1 (GELU by its
// tanh approximation, written as g·sigmoid(2·√(2/π)·(g + 0.044715·g³)),
// the same value: 0.5·(1 + tanh(z)) = sigmoid(2z)), one expression for
// both, so that a kernel carrying both costs no registers for the second.
static __device__ __forceinline__ float glu_value(float g, float u, int act) {
  const float z = act == 1 ? 1.5957691216057308f * g * (1.f + 0.044715f * g * g) : g;
  return g / (1.f + expf(-z)) * u;
}
