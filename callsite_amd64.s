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
