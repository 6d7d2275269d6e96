#include "textflag.h"

// func callerPC() uintptr
//
// Returns the return address of the function that called callerPC, that is
// the PC in *its* caller. callerPC has no frame, so BP still holds the
// caller's frame pointer; the return address sits just above it.
TEXT ·callerPC(SB),NOSPLIT|NOFRAME,$0-8
	MOVQ	8(BP), AX
	MOVQ	AX, ret+0(FP)
	RET

// func fpCallers(pcs []uintptr) int
//
// Fills pcs with the return addresses of fpCallers' caller's callers,
// innermost first, by walking the frame-pointer chain, and returns how many
// it stored. It stops at len(pcs) or at a nil frame pointer (the bottom of
// a goroutine's stack). Like callerPC it has no frame, so BP is the frame
// pointer of the Go function that called it.
TEXT ·fpCallers(SB),NOSPLIT|NOFRAME,$0-32
	MOVQ	pcs_base+0(FP), DI
	MOVQ	pcs_len+8(FP), CX
	MOVQ	BP, AX
	XORQ	DX, DX
loop:
	CMPQ	DX, CX
	JGE	done
	TESTQ	AX, AX
	JZ	done
	MOVQ	8(AX), BX
	MOVQ	BX, (DI)(DX*8)
	MOVQ	0(AX), AX
	INCQ	DX
	JMP	loop
done:
	MOVQ	DX, ret+24(FP)
	RET
