//go:build !purego

#include "textflag.h"

// func scanPlain(s []byte) (n int, high bool)
//
// SSE2 (the amd64 baseline): 32 bytes a step while they last, then 16.
TEXT ·scanPlain(SB), NOSPLIT, $0-33
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
	PXOR X7, X7

loop32:
	LEAQ 32(AX), DX
	CMPQ DX, CX
	JA   loop16
	MOVOU (SI)(AX*1), X0
	MOVOU 16(SI)(AX*1), X8
	MOVO  X0, X4
	PCMPEQB X1, X4
	MOVO  X0, X5
	PCMPEQB X2, X5
	POR   X5, X4
	MOVO  X0, X5
	PMINUB X3, X5
	PCMPEQB X0, X5
	POR   X5, X4
	MOVO  X8, X9
	PCMPEQB X1, X9
	MOVO  X8, X10
	PCMPEQB X2, X10
	POR   X10, X9
	MOVO  X8, X10
	PMINUB X3, X10
	PCMPEQB X8, X10
	POR   X10, X9
	POR   X9, X4
	PMOVMSKB X4, DX
	TESTL DX, DX
	JNZ   loop16 // a hit in these 32: find it 16 at a time
	POR   X0, X7
	POR   X8, X7
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
	PMOVMSKB X4, DX
	TESTL DX, DX
	JNZ   found
	POR   X0, X7
	ADDQ  $16, AX
	JMP   loop16

found:
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

done:
	MOVQ AX, n+24(FP)
	PMOVMSKB X7, BX
	TESTL BX, BX
	SETNE high+32(FP)
	RET
