# The GPU binary of ze_test_program: two kernels whose code is kernels.asm assembled by iga64 for
# XeHP (12p5), each in its own .text.<kernel> section as in Intel's zebin, with a DWARF line table
# (kernels.cl, lines 10-14) and the IntelGT note naming the GPU core (GFXCORE_FAMILY, XE_HP_CORE).
# Assembled by GNU as with -I naming the directory of kernels.krn (the iga64 output).
	.file 1 "kernels.cl"
	.loc_mark_labels 1
	.macro kernel name
	.section .text.\name,"ax",@progbits
	.globl \name
	.type \name,@function
	.loc 1 10
\name:
	.incbin "kernels.krn",0,16
	.loc 1 11
.L\name\()1:	.incbin "kernels.krn",16,16
	.loc 1 12
.L\name\()2:	.incbin "kernels.krn",32,16
	.loc 1 13
.L\name\()3:	.incbin "kernels.krn",48,16
	.loc 1 14
.L\name\()4:	.incbin "kernels.krn",64,16
	.size \name, .-\name
	.endm
	kernel kernel_a
	kernel kernel_b
	.section .note.intelgt.compat,"a",@note
	.long 8, 4, 2
	.asciz "IntelGT"
	.long 0x0c05
