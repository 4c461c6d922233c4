#include "textflag.h"

// Activation quantization (see act.go) with AVX2: per block, max|x| by
// VMAXPS, then round(x·127/max) to nearest even by VCVTPS2DQ, packed to
// bytes, with the sum of every 16 quantized values. Results are identical
// to quantizeBlock's.

DATA actPerm<>+0(SB)/4, $0
DATA actPerm<>+4(SB)/4, $4
DATA actPerm<>+8(SB)/4, $1
DATA actPerm<>+12(SB)/4, $5
DATA actPerm<>+16(SB)/4, $2
DATA actPerm<>+20(SB)/4, $6
DATA actPerm<>+24(SB)/4, $3
DATA actPerm<>+28(SB)/4, $7
GLOBL actPerm<>(SB), RODATA|NOPTR, $32

// func quantizeRowAVX2(x *float32, q *int8, n, bs int, d *float32, sums *int16)
TEXT ·quantizeRowAVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ n+16(FP), R11
	MOVQ bs+24(FP), R12
	MOVQ d+32(FP), R8
	MOVQ sums+40(FP), R9
	MOVL         $0x7fffffff, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15 // |x| mask
	MOVL         $0x42fe0000, AX // 127.0
	VMOVD        AX, X14
	VPCMPEQW     Y13, Y13, Y13
	VPSRLW       $15, Y13, Y13 // 16-bit ones
	MOVL         $0x01010101, AX
	VMOVD        AX, X12
	VPBROADCASTD X12, Y12 // byte ones
	VMOVDQU      actPerm<>(SB), Y11

block:
	// amax over bs values.
	VXORPS Y0, Y0, Y0
	MOVQ   SI, R10
	MOVQ   R12, CX

amax:
	VANDPS (R10), Y15, Y1
	VMAXPS Y1, Y0, Y0
	ADDQ   $32, R10
	SUBQ   $8, CX
	JNZ    amax
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VDIVSS       X14, X0, X2 // d = amax/127
	VMOVSS       X2, (R8)
	VXORPS       X3, X3, X3
	VUCOMISS     X3, X0
	JEQ          scaled // amax == 0: id = 0
	VDIVSS       X0, X14, X3 // id = 127/amax

scaled:
	VBROADCASTSS X3, Y3
	MOVQ         R12, CX

quant:
	VMULPS      (SI), Y3, Y4
	VMULPS      32(SI), Y3, Y5
	VMULPS      64(SI), Y3, Y6
	VMULPS      96(SI), Y3, Y7
	VCVTPS2DQ   Y4, Y4
	VCVTPS2DQ   Y5, Y5
	VCVTPS2DQ   Y6, Y6
	VCVTPS2DQ   Y7, Y7
	VPACKSSDW   Y5, Y4, Y4
	VPACKSSDW   Y7, Y6, Y6
	VPACKSSWB   Y6, Y4, Y4
	VPERMD      Y4, Y11, Y4
	VMOVDQU     Y4, (DI)
	VPMADDUBSW  Y4, Y12, Y5
	VPMADDWD    Y13, Y5, Y5
	VPHADDD     Y5, Y5, Y5
	VPHADDD     Y5, Y5, Y5
	VMOVD        X5, AX
	MOVW         AX, (R9)
	VEXTRACTI128 $1, Y5, X6
	VMOVD        X6, AX
	MOVW         AX, 2(R9)
	ADDQ         $128, SI
	ADDQ         $32, DI
	ADDQ         $4, R9
	SUBQ         $32, CX
	JNZ          quant

	ADDQ $4, R8
	SUBQ R12, R11
	JNZ  block
	VZEROUPPER
	RET
