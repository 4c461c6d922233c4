#include "textflag.h"

// AVX2 dot products of Q2_K and Q3_K rows with Q8_K activation rows. The
// 2-bit (and high) fields of 32 values at a time are shifted into place,
// multiplied with the activations in unsigned×signed byte pairs and
// weighted by the 16-value group scales, broadcast per 128-bit lane (lane 0
// holds group g, lane 1 group g+1).

#define HSUM_Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VHADDPS      X0, X0, X0 \
	VHADDPS      X0, X0, X0

// Q3_K super-block (110 bytes): 32 bytes of high bits at 0, 64 bytes of low
// 2-bit fields at 32, 12 bytes of packed 6-bit scales at 96, f16 d at 108.
// Value = d·(sc-32)·(q3-4); the -4 goes through the activation group sums.
//
// func dotQ3_KAVX2(w *byte, q *int8, d *float32, bsums *int16, nb int) float32
TEXT ·dotQ3_KAVX2(SB), NOSPLIT, $48-44
	MOVQ w+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R8
	MOVQ bsums+24(FP), R9
	MOVQ nb+32(FP), CX
	VXORPS       Y0, Y0, Y0
	MOVL         $0x03030303, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x04040404, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
	MOVL         $0x00200020, AX
	VMOVD        AX, X12
	VPBROADCASTD X12, Y12 // 32 as int16

q3kloop:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2096(SI)
	PREFETCHT0 2144(SI)
	// Scales: low 4 bits of scale g are nibble g/8 of byte g%8, high 2
	// bits are bits 2(g/4).. of byte 8+g%4.
	MOVL 96(SI), AX  // a0
	MOVL 100(SI), BX // a1
	MOVL 104(SI), DX // t
	MOVL AX, R10
	ANDL $0x0f0f0f0f, R10
	MOVL DX, R11
	ANDL $0x03030303, R11
	SHLL $4, R11
	ORL  R11, R10
	MOVL R10, 32(SP) // sc0..3
	MOVL BX, R10
	ANDL $0x0f0f0f0f, R10
	MOVL DX, R11
	SHRL $2, R11
	ANDL $0x03030303, R11
	SHLL $4, R11
	ORL  R11, R10
	MOVL R10, 36(SP) // sc4..7
	MOVL AX, R10
	SHRL $4, R10
	ANDL $0x0f0f0f0f, R10
	MOVL DX, R11
	SHRL $4, R11
	ANDL $0x03030303, R11
	SHLL $4, R11
	ORL  R11, R10
	MOVL R10, 40(SP) // sc8..11
	MOVL BX, R10
	SHRL $4, R10
	ANDL $0x0f0f0f0f, R10
	MOVL DX, R11
	SHRL $6, R11
	ANDL $0x03030303, R11
	SHLL $4, R11
	ORL  R11, R10
	MOVL R10, 44(SP) // sc12..15
	VPMOVZXBW 32(SP), Y6
	VPSUBW    Y12, Y6, Y6
	VMOVDQU   Y6, 0(SP) // sc-32 as int16
	VPMADDWD  (R9), Y6, Y10
	VPSLLD    $2, Y10, Y10
	VPXOR     Y11, Y11, Y11
	VPSUBD    Y10, Y11, Y10 // -4·Σ sc·bsum
	VMOVDQU   0(SI), Y9     // high bits
	VMOVDQU      32(SI), Y8
	VMOVDQU      Y8, Y1
	VPAND        Y14, Y1, Y1
	VPSLLW       $2, Y9, Y2
	VPAND        Y13, Y2, Y2
	VPOR         Y2, Y1, Y1
	VPMADDUBSW   0(DI), Y1, Y1
	VPBROADCASTW 0(SP), X5
	VPBROADCASTW 2(SP), X6
	VINSERTI128  $1, X6, Y5, Y5
	VPMADDWD     Y5, Y1, Y1
	VPADDD       Y1, Y10, Y10
	VPSRLW       $2, Y8, Y1
	VPAND        Y14, Y1, Y1
	VPSLLW       $1, Y9, Y2
	VPAND        Y13, Y2, Y2
	VPOR         Y2, Y1, Y1
	VPMADDUBSW   32(DI), Y1, Y1
	VPBROADCASTW 4(SP), X5
	VPBROADCASTW 6(SP), X6
	VINSERTI128  $1, X6, Y5, Y5
	VPMADDWD     Y5, Y1, Y1
	VPADDD       Y1, Y10, Y10
	VPSRLW       $4, Y8, Y1
	VPAND        Y14, Y1, Y1
	VMOVDQU      Y9, Y2
	VPAND        Y13, Y2, Y2
	VPOR         Y2, Y1, Y1
	VPMADDUBSW   64(DI), Y1, Y1
	VPBROADCASTW 8(SP), X5
	VPBROADCASTW 10(SP), X6
	VINSERTI128  $1, X6, Y5, Y5
	VPMADDWD     Y5, Y1, Y1
	VPADDD       Y1, Y10, Y10
	VPSRLW       $6, Y8, Y1
	VPAND        Y14, Y1, Y1
	VPSRLW       $1, Y9, Y2
	VPAND        Y13, Y2, Y2
	VPOR         Y2, Y1, Y1
	VPMADDUBSW   96(DI), Y1, Y1
	VPBROADCASTW 12(SP), X5
	VPBROADCASTW 14(SP), X6
	VINSERTI128  $1, X6, Y5, Y5
	VPMADDWD     Y5, Y1, Y1
	VPADDD       Y1, Y10, Y10
	VMOVDQU      64(SI), Y8
	VMOVDQU      Y8, Y1
	VPAND        Y14, Y1, Y1
	VPSRLW       $2, Y9, Y2
	VPAND        Y13, Y2, Y2
	VPOR         Y2, Y1, Y1
	VPMADDUBSW   128(DI), Y1, Y1
	VPBROADCASTW 16(SP), X5
	VPBROADCASTW 18(SP), X6
	VINSERTI128  $1, X6, Y5, Y5
	VPMADDWD     Y5, Y1, Y1
	VPADDD       Y1, Y10, Y10
	VPSRLW       $2, Y8, Y1
	VPAND        Y14, Y1, Y1
	VPSRLW       $3, Y9, Y2
	VPAND        Y13, Y2, Y2
	VPOR         Y2, Y1, Y1
	VPMADDUBSW   160(DI), Y1, Y1
	VPBROADCASTW 20(SP), X5
	VPBROADCASTW 22(SP), X6
	VINSERTI128  $1, X6, Y5, Y5
	VPMADDWD     Y5, Y1, Y1
	VPADDD       Y1, Y10, Y10
	VPSRLW       $4, Y8, Y1
	VPAND        Y14, Y1, Y1
	VPSRLW       $4, Y9, Y2
	VPAND        Y13, Y2, Y2
	VPOR         Y2, Y1, Y1
	VPMADDUBSW   192(DI), Y1, Y1
	VPBROADCASTW 24(SP), X5
	VPBROADCASTW 26(SP), X6
	VINSERTI128  $1, X6, Y5, Y5
	VPMADDWD     Y5, Y1, Y1
	VPADDD       Y1, Y10, Y10
	VPSRLW       $6, Y8, Y1
	VPAND        Y14, Y1, Y1
	VPSRLW       $5, Y9, Y2
	VPAND        Y13, Y2, Y2
	VPOR         Y2, Y1, Y1
	VPMADDUBSW   224(DI), Y1, Y1
	VPBROADCASTW 28(SP), X5
	VPBROADCASTW 30(SP), X6
	VINSERTI128  $1, X6, Y5, Y5
	VPMADDWD     Y5, Y1, Y1
	VPADDD       Y1, Y10, Y10
	MOVWLZX      108(SI), AX
	VMOVD        AX, X5
	VCVTPH2PS    X5, X5
	VMULSS       (R8), X5, X5
	VBROADCASTSS X5, Y5
	VCVTDQ2PS    Y10, Y10
	VFMADD231PS  Y10, Y5, Y0

	ADDQ $110, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $32, R9
	DECQ CX
	JNZ  q3kloop

	HSUM_Y0
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET

// Q2_K super-block (84 bytes): 16 bytes of 4-bit scale | 4-bit minimum << 4
// at 0, 64 bytes of 2-bit fields at 16, f16 d at 80, f16 dmin at 82.
// Value = d·sc·q2 - dmin·m per group of 16.
//
// func dotQ2_KAVX2(w *byte, q *int8, d *float32, bsums *int16, nb int) float32
TEXT ·dotQ2_KAVX2(SB), NOSPLIT, $32-44
	MOVQ w+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R8
	MOVQ bsums+24(FP), R9
	MOVQ nb+32(FP), CX
	VXORPS       Y0, Y0, Y0
	VXORPS       Y11, Y11, Y11 // Σ dmin·m·bsum
	MOVL         $0x03030303, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13

q2kloop:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	VMOVDQU   (SI), X6
	VPSRLW    $4, X6, X7
	VPAND     X13, X6, X6
	VPAND     X13, X7, X7
	VPMOVZXBW X6, Y6
	VMOVDQU   Y6, 0(SP)   // scales as int16
	VPMOVZXBW X7, Y7      // minimums as int16
	VPMADDWD  (R9), Y7, Y7
	VCVTDQ2PS Y7, Y7
	MOVWLZX      82(SI), AX
	VMOVD        AX, X5
	VCVTPH2PS    X5, X5
	VMULSS       (R8), X5, X5
	VBROADCASTSS X5, Y5
	VFMADD231PS  Y7, Y5, Y11
	VPXOR        Y10, Y10, Y10
	VMOVDQU      16(SI), Y8
	VMOVDQU      Y8, Y1
	VPAND        Y14, Y1, Y1
	VPMADDUBSW   0(DI), Y1, Y1
	VPBROADCASTW 0(SP), X5
	VPBROADCASTW 2(SP), X6
	VINSERTI128  $1, X6, Y5, Y5
	VPMADDWD     Y5, Y1, Y1
	VPADDD       Y1, Y10, Y10
	VPSRLW       $2, Y8, Y1
	VPAND        Y14, Y1, Y1
	VPMADDUBSW   32(DI), Y1, Y1
	VPBROADCASTW 4(SP), X5
	VPBROADCASTW 6(SP), X6
	VINSERTI128  $1, X6, Y5, Y5
	VPMADDWD     Y5, Y1, Y1
	VPADDD       Y1, Y10, Y10
	VPSRLW       $4, Y8, Y1
	VPAND        Y14, Y1, Y1
	VPMADDUBSW   64(DI), Y1, Y1
	VPBROADCASTW 8(SP), X5
	VPBROADCASTW 10(SP), X6
	VINSERTI128  $1, X6, Y5, Y5
	VPMADDWD     Y5, Y1, Y1
	VPADDD       Y1, Y10, Y10
	VPSRLW       $6, Y8, Y1
	VPAND        Y14, Y1, Y1
	VPMADDUBSW   96(DI), Y1, Y1
	VPBROADCASTW 12(SP), X5
	VPBROADCASTW 14(SP), X6
	VINSERTI128  $1, X6, Y5, Y5
	VPMADDWD     Y5, Y1, Y1
	VPADDD       Y1, Y10, Y10
	VMOVDQU      48(SI), Y8
	VMOVDQU      Y8, Y1
	VPAND        Y14, Y1, Y1
	VPMADDUBSW   128(DI), Y1, Y1
	VPBROADCASTW 16(SP), X5
	VPBROADCASTW 18(SP), X6
	VINSERTI128  $1, X6, Y5, Y5
	VPMADDWD     Y5, Y1, Y1
	VPADDD       Y1, Y10, Y10
	VPSRLW       $2, Y8, Y1
	VPAND        Y14, Y1, Y1
	VPMADDUBSW   160(DI), Y1, Y1
	VPBROADCASTW 20(SP), X5
	VPBROADCASTW 22(SP), X6
	VINSERTI128  $1, X6, Y5, Y5
	VPMADDWD     Y5, Y1, Y1
	VPADDD       Y1, Y10, Y10
	VPSRLW       $4, Y8, Y1
	VPAND        Y14, Y1, Y1
	VPMADDUBSW   192(DI), Y1, Y1
	VPBROADCASTW 24(SP), X5
	VPBROADCASTW 26(SP), X6
	VINSERTI128  $1, X6, Y5, Y5
	VPMADDWD     Y5, Y1, Y1
	VPADDD       Y1, Y10, Y10
	VPSRLW       $6, Y8, Y1
	VPAND        Y14, Y1, Y1
	VPMADDUBSW   224(DI), Y1, Y1
	VPBROADCASTW 28(SP), X5
	VPBROADCASTW 30(SP), X6
	VINSERTI128  $1, X6, Y5, Y5
	VPMADDWD     Y5, Y1, Y1
	VPADDD       Y1, Y10, Y10
	MOVWLZX      80(SI), AX
	VMOVD        AX, X5
	VCVTPH2PS    X5, X5
	VMULSS       (R8), X5, X5
	VBROADCASTSS X5, Y5
	VCVTDQ2PS    Y10, Y10
	VFMADD231PS  Y10, Y5, Y0

	ADDQ $84, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $32, R9
	DECQ CX
	JNZ  q2kloop

	VSUBPS Y11, Y0, Y0
	HSUM_Y0
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET
