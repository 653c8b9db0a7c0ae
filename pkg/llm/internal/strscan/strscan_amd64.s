//go:build !purego

#include "textflag.h"

// SPLAT fills X with byte b.
#define SPLAT(b, X) \
	MOVQ $b, DX; \
	MOVQ DX, X; \
	PUNPCKLQDQ X, X

// HIT ORs into OUT the bytes of SRC equal to those of EQ (TMP is scratch).
#define HIT(SRC, EQ, OUT, TMP) \
	MOVO SRC, TMP; \
	PCMPEQB EQ, TMP; \
	POR TMP, OUT

// STOPS sets OUT to the bytes of SRC a reader stops at: '"' (X1), '\\'
// (X2) and control bytes (min with 0x1f in X3 equals the byte).
#define STOPS(SRC, OUT, TMP) \
	MOVO SRC, OUT; \
	PCMPEQB X1, OUT; \
	HIT(SRC, X2, OUT, TMP); \
	MOVO SRC, TMP; \
	PMINUB X3, TMP; \
	PCMPEQB SRC, TMP; \
	POR TMP, OUT

// ESCAPES sets OUT to the bytes of SRC a writer cannot copy: STOPS, the
// three of X11-X13 ('<', '>', '&', or '"' again without html) and high
// bytes (their sign bits, which are all PMOVMSKB reads).
#define ESCAPES(SRC, OUT, TMP) \
	STOPS(SRC, OUT, TMP); \
	HIT(SRC, X11, OUT, TMP); \
	HIT(SRC, X12, OUT, TMP); \
	HIT(SRC, X13, OUT, TMP); \
	POR SRC, OUT

// CONSTS loads X1-X3 for STOPS and clears the offset (AX).
#define CONSTS \
	XORQ AX, AX; \
	SPLAT(0x2222222222222222, X1); \
	SPLAT(0x5c5c5c5c5c5c5c5c, X2); \
	SPLAT(0x1f1f1f1f1f1f1f1f, X3)

// func Plain(s []byte) (n int, high bool)
//
// 32 bytes a step while they last, then 16; X7 gathers the bytes passed
// (their sign bits say whether one was high).
TEXT ·Plain(SB), NOSPLIT, $0-33
	MOVQ s_base+0(FP), SI
	MOVQ s_len+8(FP), CX
	CONSTS
	PXOR X7, X7

plain32:
	LEAQ 32(AX), DX
	CMPQ DX, CX
	JA   plain16
	MOVOU (SI)(AX*1), X0
	MOVOU 16(SI)(AX*1), X8
	STOPS(X0, X4, X5)
	STOPS(X8, X9, X10)
	POR   X9, X4
	PMOVMSKB X4, DX
	TESTL DX, DX
	JNZ   plain16 // a hit in these 32: find it 16 at a time
	POR   X0, X7
	POR   X8, X7
	ADDQ  $32, AX
	JMP   plain32

plain16:
	LEAQ 16(AX), DX
	CMPQ DX, CX
	JA   plaindone
	MOVOU (SI)(AX*1), X0
	STOPS(X0, X4, X5)
	PMOVMSKB X4, DX
	TESTL DX, DX
	JNZ   plainfound
	POR   X0, X7
	ADDQ  $16, AX
	JMP   plain16

plainfound:
	// DX: the hits of the block at AX. The bytes before the first one
	// count for high: mask their sign bits with (1<<k)-1.
	BSFL DX, CX
	PMOVMSKB X0, BX
	MOVL $1, DX
	SHLL CX, DX
	DECL DX
	ANDL DX, BX
	ADDQ CX, AX
	PMOVMSKB X7, DX
	ORL  DX, BX
	MOVQ AX, n+24(FP)
	SETNE high+32(FP)
	RET

plaindone:
	MOVQ AX, n+24(FP)
	PMOVMSKB X7, BX
	TESTL BX, BX
	SETNE high+32(FP)
	RET

// func Escape(s []byte, html bool) int
TEXT ·Escape(SB), NOSPLIT, $0-40
	MOVQ s_base+0(FP), SI
	MOVQ s_len+8(FP), CX
	CONSTS
	MOVBLZX html+24(FP), DX
	TESTL DX, DX
	JZ    nohtml
	SPLAT(0x3c3c3c3c3c3c3c3c, X11)
	SPLAT(0x3e3e3e3e3e3e3e3e, X12)
	SPLAT(0x2626262626262626, X13)
	JMP   escape32

nohtml:
	MOVO X1, X11
	MOVO X1, X12
	MOVO X1, X13

escape32:
	LEAQ 32(AX), DX
	CMPQ DX, CX
	JA   escape16
	MOVOU (SI)(AX*1), X0
	MOVOU 16(SI)(AX*1), X8
	ESCAPES(X0, X4, X5)
	ESCAPES(X8, X9, X10)
	POR   X9, X4
	PMOVMSKB X4, DX
	TESTL DX, DX
	JNZ   escape16 // a hit in these 32: find it 16 at a time
	ADDQ  $32, AX
	JMP   escape32

escape16:
	LEAQ 16(AX), DX
	CMPQ DX, CX
	JA   escapedone
	MOVOU (SI)(AX*1), X0
	ESCAPES(X0, X4, X5)
	PMOVMSKB X4, DX
	TESTL DX, DX
	JNZ   escapefound
	ADDQ  $16, AX
	JMP   escape16

escapefound:
	BSFL DX, DX
	ADDQ DX, AX

escapedone:
	MOVQ AX, ret+32(FP)
	RET
