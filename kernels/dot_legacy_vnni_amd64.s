#include "textflag.h"

// AVX512-VNNI (with AVX512VL, on 256-bit registers) variants of the AVX2
// kernels in dot_legacy_amd64.s, generated from that file by vnniFromAVX2
// (vnni_gen_test.go); do not edit. TestVNNIInStep checks they match.

// AVX2 dot products of the remaining legacy types (Q4_1, Q5_0, Q5_1) with
// Q8_0-style activation blocks. The 32 values of a block are laid out as
// [low nibbles | high nibbles] in one register, values 0..15 and 16..31;
// Q5's 32 high bits are spread to bytes by shuffling byte i/8 of qh to byte
// i and testing bit i%8.

DATA q5Shuf<>+0(SB)/8, $0x0000000000000000
DATA q5Shuf<>+8(SB)/8, $0x0101010101010101
DATA q5Shuf<>+16(SB)/8, $0x0202020202020202
DATA q5Shuf<>+24(SB)/8, $0x0303030303030303
GLOBL q5Shuf<>(SB), RODATA|NOPTR, $32

DATA q5Bits<>+0(SB)/8, $0x8040201008040201
DATA q5Bits<>+8(SB)/8, $0x8040201008040201
DATA q5Bits<>+16(SB)/8, $0x8040201008040201
DATA q5Bits<>+24(SB)/8, $0x8040201008040201
GLOBL q5Bits<>(SB), RODATA|NOPTR, $32

#define HSUM_Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VHADDPS      X0, X0, X0 \
	VHADDPS      X0, X0, X0

// func dotQ4_1VNNI(w *byte, q *int8, d, s *float32, nb int) float32
TEXT ·dotQ4_1VNNI(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R8
	MOVQ s+24(FP), R9
	MOVQ nb+32(FP), CX
	VXORPS X12, X12, X12 // Σ m·s
	VXORPS       Y0, Y0, Y0
	VPCMPEQW     Y15, Y15, Y15
	VPSRLW       $15, Y15, Y15 // 16-bit ones
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x10101010, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13

loopQ4_1v:
	PREFETCHT0   2048(SI)
	MOVWLZX      (SI), AX
	VMOVD        AX, X5
	VCVTPH2PS    X5, X5
	VMULSS       (R8), X5, X5
	VBROADCASTSS X5, Y5
	VMOVDQU      4(SI), X1
	VPSRLW       $4, X1, X2
	VINSERTI128  $1, X2, Y1, Y1
	VPAND        Y14, Y1, Y1
	VMOVDQU      (DI), Y2
	VPXOR        Y6, Y6, Y6
	VPDPBUSD     Y2, Y1, Y6
	VCVTDQ2PS    Y6, Y6
	VFMADD231PS  Y6, Y5, Y0
	MOVWLZX      2(SI), AX
	VMOVD        AX, X5
	VCVTPH2PS    X5, X5
	VFMADD231SS  (R9), X5, X12
	ADDQ         $4, R9
	ADDQ $20, SI
	ADDQ $32, DI
	ADDQ $4, R8
	DECQ CX
	JNZ  loopQ4_1v

	HSUM_Y0
	VADDSS X12, X0, X0
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET

// func dotQ5_0VNNI(w *byte, q *int8, d *float32, nb int) float32
TEXT ·dotQ5_0VNNI(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R8
	MOVQ nb+24(FP), CX
	VXORPS       Y0, Y0, Y0
	VPCMPEQW     Y15, Y15, Y15
	VPSRLW       $15, Y15, Y15 // 16-bit ones
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x10101010, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
	VMOVDQU q5Shuf<>(SB), Y11
	VMOVDQU q5Bits<>(SB), Y10

loopQ5_0v:
	PREFETCHT0   2048(SI)
	MOVWLZX      (SI), AX
	VMOVD        AX, X5
	VCVTPH2PS    X5, X5
	VMULSS       (R8), X5, X5
	VBROADCASTSS X5, Y5
	VMOVDQU      6(SI), X1
	VPSRLW       $4, X1, X2
	VINSERTI128  $1, X2, Y1, Y1
	VPAND        Y14, Y1, Y1
	VPBROADCASTD 2(SI), Y2
	VPSHUFB      Y11, Y2, Y2
	VPAND        Y10, Y2, Y2
	VPCMPEQB     Y10, Y2, Y2
	VPAND        Y13, Y2, Y2
	VPOR         Y2, Y1, Y1
	VMOVDQU      (DI), Y2
	VPSUBB       Y13, Y1, Y1 // q5 - 16
	VPSIGNB      Y1, Y2, Y2
	VPSIGNB      Y1, Y1, Y1
	VPXOR        Y6, Y6, Y6
	VPDPBUSD     Y2, Y1, Y6
	VCVTDQ2PS    Y6, Y6
	VFMADD231PS  Y6, Y5, Y0
	ADDQ $22, SI
	ADDQ $32, DI
	ADDQ $4, R8
	DECQ CX
	JNZ  loopQ5_0v

	HSUM_Y0
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// func dotQ5_1VNNI(w *byte, q *int8, d, s *float32, nb int) float32
TEXT ·dotQ5_1VNNI(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R8
	MOVQ s+24(FP), R9
	MOVQ nb+32(FP), CX
	VXORPS X12, X12, X12 // Σ m·s
	VXORPS       Y0, Y0, Y0
	VPCMPEQW     Y15, Y15, Y15
	VPSRLW       $15, Y15, Y15 // 16-bit ones
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x10101010, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
	VMOVDQU q5Shuf<>(SB), Y11
	VMOVDQU q5Bits<>(SB), Y10

loopQ5_1v:
	PREFETCHT0   2048(SI)
	MOVWLZX      (SI), AX
	VMOVD        AX, X5
	VCVTPH2PS    X5, X5
	VMULSS       (R8), X5, X5
	VBROADCASTSS X5, Y5
	VMOVDQU      8(SI), X1
	VPSRLW       $4, X1, X2
	VINSERTI128  $1, X2, Y1, Y1
	VPAND        Y14, Y1, Y1
	VPBROADCASTD 4(SI), Y2
	VPSHUFB      Y11, Y2, Y2
	VPAND        Y10, Y2, Y2
	VPCMPEQB     Y10, Y2, Y2
	VPAND        Y13, Y2, Y2
	VPOR         Y2, Y1, Y1
	VMOVDQU      (DI), Y2
	VPXOR        Y6, Y6, Y6
	VPDPBUSD     Y2, Y1, Y6
	VCVTDQ2PS    Y6, Y6
	VFMADD231PS  Y6, Y5, Y0
	MOVWLZX      2(SI), AX
	VMOVD        AX, X5
	VCVTPH2PS    X5, X5
	VFMADD231SS  (R9), X5, X12
	ADDQ         $4, R9
	ADDQ $24, SI
	ADDQ $32, DI
	ADDQ $4, R8
	DECQ CX
	JNZ  loopQ5_1v

	HSUM_Y0
	VADDSS X12, X0, X0
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET
