#include "textflag.h"

// func widenF16AVX2(dst *float32, src *uint16, n int)
TEXT ·widenF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

wf16loop8:
	CMPQ CX, $8
	JL   wf16tail
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JMP       wf16loop8

wf16tail:
	TESTQ CX, CX
	JZ    wf16done
	MOVWLZX   (SI), AX
	VMOVD     AX, X0
	VCVTPH2PS X0, X0
	VMOVSS    X0, (DI)
	ADDQ      $2, SI
	ADDQ      $4, DI
	DECQ      CX
	JMP       wf16tail

wf16done:
	VZEROUPPER
	RET

// func widenQ8_0AVX2(dst *float32, src *byte, nb int)
TEXT ·widenQ8_0AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nb+16(FP), CX

wq8loop:
	TESTQ CX, CX
	JZ    wq8done
	MOVWLZX      (SI), AX
	VMOVD        AX, X1
	VCVTPH2PS    X1, X1
	VBROADCASTSS X1, Y1
	VPMOVSXBD    2(SI), Y0
	VCVTDQ2PS    Y0, Y0
	VMULPS       Y1, Y0, Y0
	VMOVUPS      Y0, (DI)
	VPMOVSXBD    10(SI), Y0
	VCVTDQ2PS    Y0, Y0
	VMULPS       Y1, Y0, Y0
	VMOVUPS      Y0, 32(DI)
	VPMOVSXBD    18(SI), Y0
	VCVTDQ2PS    Y0, Y0
	VMULPS       Y1, Y0, Y0
	VMOVUPS      Y0, 64(DI)
	VPMOVSXBD    26(SI), Y0
	VCVTDQ2PS    Y0, Y0
	VMULPS       Y1, Y0, Y0
	VMOVUPS      Y0, 96(DI)
	ADDQ         $34, SI
	ADDQ         $128, DI
	DECQ         CX
	JMP          wq8loop

wq8done:
	VZEROUPPER
	RET
