#include "textflag.h"

// AVX512-VNNI (with AVX512VL, on 256-bit registers) variants of the AVX2
// kernels in dot_kquant_amd64.s, generated from that file by vnniFromAVX2
// (vnni_gen_test.go); do not edit. TestVNNIInStep checks they match.

// AVX2 dot products of Q4_K, Q5_K and Q6_K rows with Q8_K activation
// rows (256-value super-blocks with 16-value group sums).
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

// Q4_K super-block (144 bytes): f16 d at 0, f16 dmin at 2, 12 bytes of
// packed 6-bit scales and minimums at 4, 128 bytes of nibbles at 16.
// The activation super-block is 256 int8 at DI, its scale at R8 and its
// sixteen 16-value sums at R9.
//
// func dotQ4_KVNNI(w *byte, q *int8, d *float32, bsums *int16, nb int) float32
TEXT ·dotQ4_KVNNI(SB), NOSPLIT, $16-44
	MOVQ w+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R8
	MOVQ bsums+24(FP), R9
	MOVQ nb+32(FP), CX
	VXORPS Y0, Y0, Y0   // Σ d·sc·(q·x)
	VXORPS X12, X12, X12 // Σ dmin·m·bsum
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14

q4kloopv:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2096(SI)
	PREFETCHT0 2144(SI)
	PREFETCHT1 6144(SI)
	PREFETCHT1 6208(SI)
	// Unpack the scales (bytes sc0..sc7) into AX and minimums into R12:
	// u0 = s[0:4], u1 = s[4:8], u2 = s[8:12];
	// sc0..3 = u0 & 0x3f, sc4..7 = (u2 & 0x0f) | (u0>>6 & 3)<<4,
	// m0..3 = u1 & 0x3f,  m4..7 = (u2>>4 & 0x0f) | (u1>>6 & 3)<<4.
	MOVL 4(SI), AX
	MOVL 8(SI), BX
	MOVL 12(SI), DX
	MOVL DX, R10
	SHRL $4, R10
	ANDL $0x0f0f0f0f, R10
	MOVL BX, R11
	SHRL $6, R11
	ANDL $0x03030303, R11
	SHLL $4, R11
	ORL  R11, R10         // m4..7
	MOVL BX, R12
	ANDL $0x3f3f3f3f, R12 // m0..3
	MOVL DX, R13
	ANDL $0x0f0f0f0f, R13
	MOVL AX, R11
	SHRL $6, R11
	ANDL $0x03030303, R11
	SHLL $4, R11
	ORL  R11, R13         // sc4..7
	ANDL $0x3f3f3f3f, AX  // sc0..3
	SHLQ $32, R13
	ORQ  R13, AX
	SHLQ $32, R10
	ORQ  R10, R12

	VMOVQ     AX, X8
	VPMOVZXBW X8, X8
	VMOVDQU   X8, 0(SP) // sc0..7 as int16

	VPXOR Y10, Y10, Y10

#define Q4K_CHUNK(j) \
	VMOVDQU      (16+32*j)(SI), Y1 \
	VPSRLW       $4, Y1, Y2 \
	VPAND        Y14, Y1, Y1 \
	VPAND        Y14, Y2, Y2 \
	VPMADDUBSW   (64*j)(DI), Y1, Y1 \
	VPMADDUBSW   (64*j+32)(DI), Y2, Y2 \
	VPBROADCASTW (4*j)(SP), Y3 \
	VPBROADCASTW (4*j+2)(SP), Y4 \
	VPDPWSSD     Y3, Y1, Y10 \
	VPDPWSSD     Y4, Y2, Y10

	Q4K_CHUNK(0)
	Q4K_CHUNK(1)
	Q4K_CHUNK(2)
	Q4K_CHUNK(3)

	MOVWLZX      (SI), BX
	VMOVD        BX, X5
	VCVTPH2PS    X5, X5
	VMULSS       (R8), X5, X5
	VBROADCASTSS X5, Y5
	VCVTDQ2PS    Y10, Y10
	VFMADD231PS  Y10, Y5, Y0

	// Minimums: Σ m_j·(bsum[2j]+bsum[2j+1]).
	VMOVQ        R12, X6
	VPMOVZXBW    X6, X6
	VMOVDQU      (R9), Y7
	VEXTRACTI128 $1, Y7, X11
	VPHADDW      X11, X7, X7
	VPMADDWD     X6, X7, X7
	VCVTDQ2PS    X7, X7
	MOVWLZX      2(SI), BX
	VMOVD        BX, X5
	VCVTPH2PS    X5, X5
	VMULSS       (R8), X5, X5
	VBROADCASTSS X5, X5
	VFMADD231PS  X7, X5, X12

	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $32, R9
	DECQ CX
	JNZ  q4kloopv

	HSUM_Y0
	VHADDPS X12, X12, X12
	VHADDPS X12, X12, X12
	VSUBSS  X12, X0, X0
	VMOVSS  X0, ret+40(FP)
	VZEROUPPER
	RET

// Q5_K super-block (176 bytes): f16 d at 0, f16 dmin at 2, 12 bytes of
// packed scales and minimums at 4 (as Q4_K), 32 bytes of high bits at 16,
// 128 bytes of low nibbles at 48. Value l of group pair j has its fifth bit
// in bit 2j (low nibbles) or 2j+1 (high nibbles) of qh[l].
//
// func dotQ5_KVNNI(w *byte, q *int8, d *float32, bsums *int16, nb int) float32
TEXT ·dotQ5_KVNNI(SB), NOSPLIT, $16-44
	MOVQ w+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R8
	MOVQ bsums+24(FP), R9
	MOVQ nb+32(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS X12, X12, X12
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x10101010, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13

q5kloopv:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	// Scales and minimums, packed as in Q4_K.
	MOVL 4(SI), AX
	MOVL 8(SI), BX
	MOVL 12(SI), DX
	MOVL DX, R10
	SHRL $4, R10
	ANDL $0x0f0f0f0f, R10
	MOVL BX, R11
	SHRL $6, R11
	ANDL $0x03030303, R11
	SHLL $4, R11
	ORL  R11, R10         // m4..7
	MOVL BX, R12
	ANDL $0x3f3f3f3f, R12 // m0..3
	MOVL DX, R13
	ANDL $0x0f0f0f0f, R13
	MOVL AX, R11
	SHRL $6, R11
	ANDL $0x03030303, R11
	SHLL $4, R11
	ORL  R11, R13         // sc4..7
	ANDL $0x3f3f3f3f, AX  // sc0..3
	SHLQ $32, R13
	ORQ  R13, AX
	SHLQ $32, R10
	ORQ  R10, R12

	VMOVQ     AX, X8
	VPMOVZXBW X8, X8
	VMOVDQU   X8, 0(SP) // sc0..7 as int16

	VPXOR   Y10, Y10, Y10
	VMOVDQU 16(SI), Y9 // qh

	// Values 64·0..64·0+63: low nibbles with qh bit 0, high nibbles with bit 1.
	VMOVDQU      48(SI), Y1
	VPSRLW       $4, Y1, Y2
	VPAND        Y14, Y1, Y1
	VPAND        Y14, Y2, Y2
	VPSLLW $4, Y9, Y7
	VPAND        Y13, Y7, Y7
	VPOR         Y7, Y1, Y1
	VPSLLW $3, Y9, Y7
	VPAND        Y13, Y7, Y7
	VPOR         Y7, Y2, Y2
	VPMADDUBSW   0(DI), Y1, Y1
	VPMADDUBSW   32(DI), Y2, Y2
	VPBROADCASTW 0(SP), Y3
	VPBROADCASTW 2(SP), Y4
	VPDPWSSD     Y3, Y1, Y10
	VPDPWSSD     Y4, Y2, Y10

	// Values 64·1..64·1+63: low nibbles with qh bit 2, high nibbles with bit 3.
	VMOVDQU      80(SI), Y1
	VPSRLW       $4, Y1, Y2
	VPAND        Y14, Y1, Y1
	VPAND        Y14, Y2, Y2
	VPSLLW $2, Y9, Y7
	VPAND        Y13, Y7, Y7
	VPOR         Y7, Y1, Y1
	VPSLLW $1, Y9, Y7
	VPAND        Y13, Y7, Y7
	VPOR         Y7, Y2, Y2
	VPMADDUBSW   64(DI), Y1, Y1
	VPMADDUBSW   96(DI), Y2, Y2
	VPBROADCASTW 4(SP), Y3
	VPBROADCASTW 6(SP), Y4
	VPDPWSSD     Y3, Y1, Y10
	VPDPWSSD     Y4, Y2, Y10

	// Values 64·2..64·2+63: low nibbles with qh bit 4, high nibbles with bit 5.
	VMOVDQU      112(SI), Y1
	VPSRLW       $4, Y1, Y2
	VPAND        Y14, Y1, Y1
	VPAND        Y14, Y2, Y2
	VMOVDQU Y9, Y7
	VPAND        Y13, Y7, Y7
	VPOR         Y7, Y1, Y1
	VPSRLW $1, Y9, Y7
	VPAND        Y13, Y7, Y7
	VPOR         Y7, Y2, Y2
	VPMADDUBSW   128(DI), Y1, Y1
	VPMADDUBSW   160(DI), Y2, Y2
	VPBROADCASTW 8(SP), Y3
	VPBROADCASTW 10(SP), Y4
	VPDPWSSD     Y3, Y1, Y10
	VPDPWSSD     Y4, Y2, Y10

	// Values 64·3..64·3+63: low nibbles with qh bit 6, high nibbles with bit 7.
	VMOVDQU      144(SI), Y1
	VPSRLW       $4, Y1, Y2
	VPAND        Y14, Y1, Y1
	VPAND        Y14, Y2, Y2
	VPSRLW $2, Y9, Y7
	VPAND        Y13, Y7, Y7
	VPOR         Y7, Y1, Y1
	VPSRLW $3, Y9, Y7
	VPAND        Y13, Y7, Y7
	VPOR         Y7, Y2, Y2
	VPMADDUBSW   192(DI), Y1, Y1
	VPMADDUBSW   224(DI), Y2, Y2
	VPBROADCASTW 12(SP), Y3
	VPBROADCASTW 14(SP), Y4
	VPDPWSSD     Y3, Y1, Y10
	VPDPWSSD     Y4, Y2, Y10

	MOVWLZX      (SI), BX
	VMOVD        BX, X5
	VCVTPH2PS    X5, X5
	VMULSS       (R8), X5, X5
	VBROADCASTSS X5, Y5
	VCVTDQ2PS    Y10, Y10
	VFMADD231PS  Y10, Y5, Y0

	// Minimums: Σ m_j·(bsum[2j]+bsum[2j+1]).
	VMOVQ        R12, X6
	VPMOVZXBW    X6, X6
	VMOVDQU      (R9), Y7
	VEXTRACTI128 $1, Y7, X11
	VPHADDW      X11, X7, X7
	VPMADDWD     X6, X7, X7
	VCVTDQ2PS    X7, X7
	MOVWLZX      2(SI), BX
	VMOVD        BX, X5
	VCVTPH2PS    X5, X5
	VMULSS       (R8), X5, X5
	VBROADCASTSS X5, X5
	VFMADD231PS  X7, X5, X12

	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $32, R9
	DECQ CX
	JNZ  q5kloopv

	HSUM_Y0
	VHADDPS X12, X12, X12
	VHADDPS X12, X12, X12
	VSUBSS  X12, X0, X0
	VMOVSS  X0, ret+40(FP)
	VZEROUPPER
	RET

// Q6_K super-block (210 bytes): 128 bytes of low nibbles at 0, 64 bytes of
// high 2-bit pairs at 128, 16 int8 scales at 192, f16 d at 208. Value
// q6 - 32 of group g is scaled by sc[g]; the -32 is applied through the
// activation's group sums: Σ sc·(q6-32)·x = Σ sc·q6·x - 32·Σ sc·bsum.
//
// func dotQ6_KVNNI(w *byte, q *int8, d *float32, bsums *int16, nb int) float32
TEXT ·dotQ6_KVNNI(SB), NOSPLIT, $32-44
	MOVQ w+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R8
	MOVQ bsums+24(FP), R9
	MOVQ nb+32(FP), CX
	VXORPS       Y0, Y0, Y0
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x30303030, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13

q6kloopv:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2096(SI)
	PREFETCHT0 2144(SI)
	PREFETCHT0 2192(SI)
	PREFETCHT0 2240(SI)
	PREFETCHT1 6144(SI)
	PREFETCHT1 6208(SI)
	PREFETCHT1 6272(SI)
	VPMOVSXBW 192(SI), Y6
	VMOVDQU   Y6, 0(SP) // sc0..15 as int16
	VPMADDWD  (R9), Y6, Y11
	VPSLLD    $5, Y11, Y11 // 32·Σ sc·bsum, in pairs
	VPXOR     Y10, Y10, Y10

// Q6K_GROUPS multiplies the 32 values in Y of groups (g, g+1) by their
// activations at xoff and accumulates them scaled by sc[g] (low lane) and
// sc[g+1] (high lane).
#define Q6K_GROUPS(Y, xoff, g) \
	VPMADDUBSW   xoff(DI), Y, Y \
	VPBROADCASTW (2*(g))(SP), X8 \
	VPBROADCASTW (2*(g)+2)(SP), X9 \
	VINSERTI128  $1, X9, Y8, Y8 \
	VPDPWSSD     Y8, Y, Y10

#define Q6K_HALF(h) \
	VMOVDQU (64*h)(SI), Y1 \
	VMOVDQU (64*h+32)(SI), Y2 \
	VMOVDQU (128+32*h)(SI), Y3 \
	VPAND   Y14, Y1, Y4 \
	VPSLLW  $4, Y3, Y5 \
	VPAND   Y13, Y5, Y5 \
	VPOR    Y5, Y4, Y4 \
	VPAND   Y14, Y2, Y5 \
	VPSLLW  $2, Y3, Y6 \
	VPAND   Y13, Y6, Y6 \
	VPOR    Y6, Y5, Y5 \
	VPSRLW  $4, Y1, Y1 \
	VPAND   Y14, Y1, Y1 \
	VPAND   Y13, Y3, Y6 \
	VPOR    Y6, Y1, Y1 \
	VPSRLW  $4, Y2, Y2 \
	VPAND   Y14, Y2, Y2 \
	VPSRLW  $2, Y3, Y6 \
	VPAND   Y13, Y6, Y6 \
	VPOR    Y6, Y2, Y2 \
	Q6K_GROUPS(Y4, 128*h, 8*h) \
	Q6K_GROUPS(Y5, 128*h+32, 8*h+2) \
	Q6K_GROUPS(Y1, 128*h+64, 8*h+4) \
	Q6K_GROUPS(Y2, 128*h+96, 8*h+6)

	Q6K_HALF(0)
	Q6K_HALF(1)

	VPSUBD       Y11, Y10, Y10
	MOVWLZX      208(SI), BX
	VMOVD        BX, X5
	VCVTPH2PS    X5, X5
	VMULSS       (R8), X5, X5
	VBROADCASTSS X5, Y5
	VCVTDQ2PS    Y10, Y10
	VFMADD231PS  Y10, Y5, Y0

	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $32, R9
	DECQ CX
	JNZ  q6kloopv

	HSUM_Y0
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET
