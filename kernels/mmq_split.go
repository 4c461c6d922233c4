package kernels

// How the tensor-core products (mmq.cu) split the k range of a product
// whose grid of tiles is too small to fill the device: each part is a
// block of the same tile over a run of whole stages, writing its partial
// sums to the scratch, and mmq_reduce adds the parts in part order. The
// choice depends only on the shape, the tile and the multiprocessor
// count, so a product sums the same way every time it runs.

// mmqSplitBytes is the scratch a split product's partial sums may take:
// parts × batch × rows f32 values at most.
const mmqSplitBytes = 16 << 20

// mmqMinPartStages is the fewest 128-value stages a part holds, so that
// the pipeline of a part has a few stages to overlap.
const mmqMinPartStages = 4

// mmqWarpsPerSM is the warps of tile blocks per multiprocessor a product
// is split to reach: two waves of 16 warps (the most the kernels' launch
// bounds hold on one multiprocessor).
const mmqWarpsPerSM = 32

// mmqWideBatch is the largest batch a product splits in two parts: past
// it a grid is split in three parts or more, or not at all. On the H200
// (BenchmarkGPUMatMul) two parts ran 2–8% slower than one at B = 128 and
// 512 (e.g. 4096×4096 Q4_K at B = 512: 98.8 against 106.9 TFLOP/s), while
// mmqSplit's splits of 3 to 16 parts ran those batches 1.1–4.7× faster on
// narrow grids (1024×4096 Q4_K at B = 512: 72.1 against 38.9; 2048×8192
// at B = 128: 78.4 against 21.2).
const mmqWideBatch = 64

// mmqSplit is the split of a product of stages k stages over rows weight
// rows and B batch rows, whose tile grid has blocks blocks of warps warps,
// on sms multiprocessors: parts (1: not split) of per stages each (even,
// so that a part starts on a 256-value super-block; the last part may be
// shorter). It splits only while the grid holds fewer than
// mmqWarpsPerSM·sms warps, into at most enough parts to reach that, each
// of at least mmqMinPartStages stages, with the partial sums within
// mmqSplitBytes, and past mmqWideBatch in three parts at least.
func mmqSplit(stages, rows, B, blocks, warps, sms int) (parts, per int) {
	target := mmqWarpsPerSM * sms
	if blocks*warps >= target {
		return 1, stages
	}
	want := (target + blocks*warps - 1) / (blocks * warps)
	parts, per = mmqSplitParts(stages, rows, B, want)
	if parts == 2 && B > mmqWideBatch {
		return 1, stages
	}
	return parts, per
}

// mmqSplitParts is the split of stages k stages into at most want parts
// of per stages (even; at least mmqMinPartStages unless that leaves one
// part), with parts × B × rows f32 within mmqSplitBytes: (1, stages) when
// no split of two parts or more fits.
func mmqSplitParts(stages, rows, B, want int) (parts, per int) {
	want = min(want, stages/mmqMinPartStages, mmqSplitBytes/(4*max(1, B*rows)))
	if want < 2 {
		return 1, stages
	}
	per = (stages + want - 1) / want
	per += per & 1
	parts = (stages + per - 1) / per
	if parts < 2 {
		return 1, stages
	}
	return parts, per
}
