//go:build !purego

#include "textflag.h"

// func scanEscape(s []byte, html bool) int
//
// SSE2 (the amd64 baseline): 32 bytes a step while they last, then 16.
// A byte is flagged when it is '"', '\\', a control byte or >= 0x80, and
// with html also '<', '>' or '&'.
TEXT ·scanEscape(SB), NOSPLIT, $0-40
	MOVQ s_base+0(FP), SI
	MOVQ s_len+8(FP), CX
	XORQ AX, AX
	MOVQ $0x2222222222222222, DX
	MOVQ DX, X1
	PUNPCKLQDQ X1, X1
	MOVQ $0x5c5c5c5c5c5c5c5c, DX
	MOVQ DX, X2
	PUNPCKLQDQ X2, X2
	MOVQ $0x1f1f1f1f1f1f1f1f, DX
	MOVQ DX, X3
	PUNPCKLQDQ X3, X3
	// '<', '>', '&', or (without html) three bytes that flag nothing
	// new: '"' again.
	MOVBLZX html+24(FP), DX
	TESTL DX, DX
	JZ    plain
	MOVQ $0x3c3c3c3c3c3c3c3c, DX
	MOVQ DX, X11
	PUNPCKLQDQ X11, X11
	MOVQ $0x3e3e3e3e3e3e3e3e, DX
	MOVQ DX, X12
	PUNPCKLQDQ X12, X12
	MOVQ $0x2626262626262626, DX
	MOVQ DX, X13
	PUNPCKLQDQ X13, X13
	JMP   loop32
plain:
	MOVO X1, X11
	MOVO X1, X12
	MOVO X1, X13

loop32:
	LEAQ 32(AX), DX
	CMPQ DX, CX
	JA   loop16
	MOVOU (SI)(AX*1), X0
	MOVOU 16(SI)(AX*1), X8
	// X4: the hits of X0 but its high bytes; X9: those of X8.
	MOVO  X0, X4
	PCMPEQB X1, X4
	MOVO  X0, X5
	PCMPEQB X2, X5
	POR   X5, X4
	MOVO  X0, X5
	PMINUB X3, X5
	PCMPEQB X0, X5
	POR   X5, X4
	MOVO  X0, X5
	PCMPEQB X11, X5
	POR   X5, X4
	MOVO  X0, X5
	PCMPEQB X12, X5
	POR   X5, X4
	MOVO  X0, X5
	PCMPEQB X13, X5
	POR   X5, X4
	POR   X0, X4 // the sign bits of high bytes
	MOVO  X8, X9
	PCMPEQB X1, X9
	MOVO  X8, X10
	PCMPEQB X2, X10
	POR   X10, X9
	MOVO  X8, X10
	PMINUB X3, X10
	PCMPEQB X8, X10
	POR   X10, X9
	MOVO  X8, X10
	PCMPEQB X11, X10
	POR   X10, X9
	MOVO  X8, X10
	PCMPEQB X12, X10
	POR   X10, X9
	MOVO  X8, X10
	PCMPEQB X13, X10
	POR   X10, X9
	POR   X8, X9
	POR   X9, X4
	PMOVMSKB X4, DX
	TESTL DX, DX
	JNZ   loop16 // a hit in these 32: find it 16 at a time
	ADDQ  $32, AX
	JMP   loop32

loop16:
	LEAQ 16(AX), DX
	CMPQ DX, CX
	JA   done
	MOVOU (SI)(AX*1), X0
	MOVO  X0, X4
	PCMPEQB X1, X4
	MOVO  X0, X5
	PCMPEQB X2, X5
	POR   X5, X4
	MOVO  X0, X5
	PMINUB X3, X5
	PCMPEQB X0, X5
	POR   X5, X4
	MOVO  X0, X5
	PCMPEQB X11, X5
	POR   X5, X4
	MOVO  X0, X5
	PCMPEQB X12, X5
	POR   X5, X4
	MOVO  X0, X5
	PCMPEQB X13, X5
	POR   X5, X4
	POR   X0, X4
	PMOVMSKB X4, DX
	TESTL DX, DX
	JNZ   found
	ADDQ  $16, AX
	JMP   loop16

found:
	BSFL DX, DX
	ADDQ DX, AX

done:
	MOVQ AX, ret+32(FP)
	RET
