#include "textflag.h"

// func Getg() uintptr
TEXT ·Getg(SB),NOSPLIT|NOFRAME,$0-8
	MOVD	g, R0
	MOVD	R0, ret+0(FP)
	RET
