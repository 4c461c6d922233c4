#include "textflag.h"

// Batched attention products over rows of a cache with a fixed stride (in
// floats): Dots computes one dot product per row, Axpys one weighted sum
// of rows. hd (the row length used) is a multiple of 8. On rows 2 KiB apart
// (a KV cache of 8 heads of 64) they are bound by cache bandwidth:
// software prefetching rows 8 ahead did not help.

// func dotsAVX2(out, q, k *float32, hd, stride, n int)
TEXT ·dotsAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ k+16(FP), R8
	MOVQ hd+24(FP), R11
	MOVQ stride+32(FP), R9
	MOVQ n+40(FP), CX
	SHLQ $2, R9          // stride in bytes
	LEAQ (R9)(R9*2), R12 // 3 strides

dots4:
	CMPQ CX, $4
	JL   dots1
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   AX, AX

dots4in:
	VMOVUPS     (SI)(AX*1), Y4
	MOVQ        R8, R10
	ADDQ        AX, R10
	VFMADD231PS (R10), Y4, Y0
	VFMADD231PS (R10)(R9*1), Y4, Y1
	VFMADD231PS (R10)(R9*2), Y4, Y2
	VFMADD231PS (R10)(R12*1), Y4, Y3
	ADDQ        $32, AX
	MOVQ        R11, DX
	SHLQ        $2, DX
	CMPQ        AX, DX
	JL          dots4in
	VHADDPS      Y1, Y0, Y4
	VHADDPS      Y3, Y2, Y5
	VHADDPS      Y5, Y4, Y6
	VEXTRACTF128 $1, Y6, X7
	VADDPS       X7, X6, X6
	VMOVUPS      X6, (DI)
	ADDQ         $16, DI
	LEAQ         (R8)(R9*4), R8
	SUBQ         $4, CX
	JMP          dots4

dots1:
	TESTQ CX, CX
	JZ    dotsdone
	VXORPS Y0, Y0, Y0
	XORQ   AX, AX

dots1in:
	VMOVUPS     (SI)(AX*1), Y4
	VFMADD231PS (R8)(AX*1), Y4, Y0
	ADDQ        $32, AX
	MOVQ        R11, DX
	SHLQ        $2, DX
	CMPQ        AX, DX
	JL          dots1in
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, (DI)
	ADDQ         $4, DI
	ADDQ         R9, R8
	DECQ         CX
	JMP          dots1

dotsdone:
	VZEROUPPER
	RET

// func axpysAVX2(out, w, v *float32, hd, stride, n int)
TEXT ·axpysAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ v+16(FP), R8
	MOVQ hd+24(FP), R11
	MOVQ stride+32(FP), R9
	MOVQ n+40(FP), R12
	SHLQ $2, R9

axpys64:
	// 64 columns at a time, held in Y0..Y7 across all rows.
	CMPQ R11, $64
	JL   axpys8
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	MOVQ    R8, R10
	XORQ    CX, CX

axpys64in:
	CMPQ         CX, R12
	JGE          axpys64out
	VBROADCASTSS (SI)(CX*4), Y8
	VFMADD231PS  (R10), Y8, Y0
	VFMADD231PS  32(R10), Y8, Y1
	VFMADD231PS  64(R10), Y8, Y2
	VFMADD231PS  96(R10), Y8, Y3
	VFMADD231PS  128(R10), Y8, Y4
	VFMADD231PS  160(R10), Y8, Y5
	VFMADD231PS  192(R10), Y8, Y6
	VFMADD231PS  224(R10), Y8, Y7
	ADDQ         R9, R10
	INCQ         CX
	JMP          axpys64in

axpys64out:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ    $256, DI
	ADDQ    $256, R8
	SUBQ    $64, R11
	JMP     axpys64

axpys8:
	// The rest, 8 columns at a time.
	TESTQ R11, R11
	JZ    axpysdone
	VMOVUPS (DI), Y0
	MOVQ    R8, R10
	XORQ    CX, CX

axpys8in:
	CMPQ         CX, R12
	JGE          axpys8out
	VBROADCASTSS (SI)(CX*4), Y8
	VFMADD231PS  (R10), Y8, Y0
	ADDQ         R9, R10
	INCQ         CX
	JMP          axpys8in

axpys8out:
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, R8
	SUBQ    $8, R11
	JMP     axpys8

axpysdone:
	VZEROUPPER
	RET
