// mmh_params.cuh: the parameters of one 16-bit product launch, which
// mmh.cu (mma.sync) and mmw.cu (wgmma) take alike; the Go side mirrors it
// (mmhParams in mmh_cuda.go) and mmh_layout reports its layout.
#pragma once

#include <stdint.h>
#include <stddef.h>

// MmhParams is one product: one input X times one to three matrices of
// the same type and width (segments: w, y, rows, then w1, y1, rows1 and
// w2, y2, rows2), each into its own Y, in one launch whose grid rows are
// the segments' row tiles in turn. Pointers are device addresses, w's and
// x 16-byte aligned; cols is a multiple of 8, so every row starts 16-byte
// aligned.
struct MmhParams {
  const uint16_t *w; // rows × cols: the weights, f16 or bf16
  const uint16_t *x; // batch × cols: X rounded to the weights' type (mmh_convert)
  float *y;          // batch × rows: the result
  int rows;          // rows of W (columns of Y)
  int cols;          // columns of W and X
  int batch;         // rows of X and Y
  int accumulate;    // 1: y += X·Wᵀ; 0: y = X·Wᵀ
  int type;          // MMH_T_* (documentation and checks; each kernel reads one)
  int nseg;          // segments, 1 to 3
  const uint16_t *w1, *w2; // the second and third segments' weights
  float *y1, *y2;          // and results
  int rows1, rows2;        // and rows
  // glu = 1: w is a gate and w1 an up matrix of the same rows; a block
  // computes BM/2 rows of each (grid rows ⌈rows/(BM/2)⌉) and writes
  // h = silu(gate)·up, rounded to the weights' type, to h (batch × rows
  // 16-bit values) in place of any y.
  int glu;
  int pad_;
  uint16_t *h;
};

static_assert(sizeof(MmhParams) == 104, "MmhParams is 104 bytes (mmhParams in mmh_cuda.go)");
static_assert(offsetof(MmhParams, rows) == 24, "MmhParams.rows at 24");
static_assert(offsetof(MmhParams, rows2) == 84, "MmhParams.rows2 at 84");
