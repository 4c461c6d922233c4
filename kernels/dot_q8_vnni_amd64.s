#include "textflag.h"

// AVX512-VNNI (with AVX512VL, on 256-bit registers) variants of the AVX2
// kernels in dot_q8_amd64.s, generated from that file by vnniFromAVX2
// (vnni_gen_test.go); do not edit. TestVNNIInStep checks they match.

// AVX2 dot products of Q8_0 and Q4_0 rows with Q8_0-style activation
// blocks of 32.
//
// Every function leaves the upper halves of the vector registers
// clean (VZEROUPPER). The loops prefetch the weights 2 KiB ahead: the
// hardware prefetchers stop at each 4 KiB page, and a decode step streams
// every weight from memory once. Measured on the whole-token benchmark,
// 2-3 KiB ahead was ~30% faster than none, 512 B and 4 KiB less so. The
// Q4_K, Q6_K and Q8_0 loops also prefetch 6 KiB ahead into L2 (T1), one
// or more lines per block: on the 4 KiB pages of a model file's mapping
// this starts the page walk and the DRAM fetch of the next page early. On
// the weights of a Llama-3.2-1B Q4_K_M file, two threads, that took a
// decode step's matrix products from 47 to 39 ms (35.7 against 37.6 ms
// in huge-page memory); 4 KiB ahead was less, 8-12 KiB as good.

#define HSUM_Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VHADDPS      X0, X0, X0 \
	VHADDPS      X0, X0, X0

// Q8_0 block: f16 d at 0, 32 int8 at 2 (34 bytes).
// Per block: |w| ·(x·sign(w)) in unsigned×signed byte products summed in
// pairs (VPMADDUBSW), then in fours (VPMADDWD with ones), scaled by
// d_w·d_x into a float accumulator.
#define Q8_0_BLOCK(off, xoff, doff, acc) \
	MOVWLZX     off(SI), AX \
	VMOVD       AX, X5 \
	VCVTPH2PS   X5, X5 \
	VMULSS      doff(R8), X5, X5 \
	VBROADCASTSS X5, Y5 \
	VMOVDQU     off+2(SI), Y1 \
	VMOVDQU     xoff(DI), Y2 \
	VPSIGNB     Y1, Y1, Y3 \
	VPSIGNB     Y1, Y2, Y4 \
	VPXOR        Y6, Y6, Y6 \
	VPDPBUSD     Y4, Y3, Y6 \
	VCVTDQ2PS    Y6, Y6 \
	VFMADD231PS Y6, Y5, acc

// func dotQ8_0VNNI(w *byte, q *int8, d *float32, nb int) float32
TEXT ·dotQ8_0VNNI(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R8
	MOVQ nb+24(FP), CX
	VXORPS   Y0, Y0, Y0
	VXORPS   Y7, Y7, Y7
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15 // 16-bit ones

q8loop2v:
	CMPQ CX, $2
	JL   q8tailv
	PREFETCHT0 2048(SI)
	PREFETCHT0 2080(SI)
	PREFETCHT1 6144(SI)
	Q8_0_BLOCK(0, 0, 0, Y0)
	Q8_0_BLOCK(34, 32, 4, Y7)
	ADDQ $68, SI
	ADDQ $64, DI
	ADDQ $8, R8
	SUBQ $2, CX
	JMP  q8loop2v

q8tailv:
	TESTQ CX, CX
	JZ    q8donev
	Q8_0_BLOCK(0, 0, 0, Y0)

q8donev:
	VADDPS Y7, Y0, Y0
	HSUM_Y0
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// Q4_0 block (18 bytes): f16 d at 0, 16 bytes of nibbles at 2; value j is
// lo(j)-8, value j+16 is hi(j)-8.
#define Q4_0_BLOCK(off, xoff, doff, acc) \
	MOVWLZX      off(SI), AX \
	VMOVD        AX, X5 \
	VCVTPH2PS    X5, X5 \
	VMULSS       doff(R8), X5, X5 \
	VBROADCASTSS X5, Y5 \
	VMOVDQU      off+2(SI), X1 \
	VPSRLW       $4, X1, X2 \
	VINSERTI128  $1, X2, Y1, Y1 \
	VPAND        Y14, Y1, Y1 \
	VPSUBB       Y13, Y1, Y1 \
	VMOVDQU      xoff(DI), Y2 \
	VPSIGNB      Y1, Y1, Y3 \
	VPSIGNB      Y1, Y2, Y4 \
	VPXOR        Y6, Y6, Y6 \
	VPDPBUSD     Y4, Y3, Y6 \
	VCVTDQ2PS    Y6, Y6 \
	VFMADD231PS  Y6, Y5, acc

// func dotQ4_0VNNI(w *byte, q *int8, d *float32, nb int) float32
TEXT ·dotQ4_0VNNI(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R8
	MOVQ nb+24(FP), CX
	VXORPS   Y0, Y0, Y0
	VXORPS   Y7, Y7, Y7
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x08080808, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13

q40loop2v:
	CMPQ CX, $2
	JL   q40tailv
	PREFETCHT0 2048(SI)
	Q4_0_BLOCK(0, 0, 0, Y0)
	Q4_0_BLOCK(18, 32, 4, Y7)
	ADDQ $36, SI
	ADDQ $64, DI
	ADDQ $8, R8
	SUBQ $2, CX
	JMP  q40loop2v

q40tailv:
	TESTQ CX, CX
	JZ    q40donev
	Q4_0_BLOCK(0, 0, 0, Y0)

q40donev:
	VADDPS Y7, Y0, Y0
	HSUM_Y0
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET
