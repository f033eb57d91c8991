/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Direct-call trampolines for the fentry backend (fentry.c).
 *
 * A function built with -mfentry starts with a 5-byte call site (after
 * endbr64 when the kernel has IBT).  ftrace can patch that site into a
 * direct "call TRAMPOLINE", with no ftrace_ops list walk, no pt_regs and
 * no kprobe lookup in between: the cheapest hook a module can have on a
 * function it does not own.  The trampolines are written here in assembly
 * because they sit between a call site and a function body, where only
 * the function's own arguments are live.
 *
 * Stack of a hooked function's caller, at the trampoline's first
 * instruction (the call site pushed its own return address):
 *
 *   rsp + 8 -> return into the caller
 *   rsp     -> FUNC + PT_FENTRY_END: return into FUNC, past the call site
 *
 * PT_FENTRY_TRAMPOLINE(name, handler): entry only.  Saves the six argument
 * registers, calls handler(args...), restores them and returns into FUNC,
 * which then runs as if nothing happened.
 *
 * PT_FEXIT_TRAMPOLINE(name, func, enter, exit): entry and return, as a BPF
 * fexit trampoline does it.  It drops the return into FUNC and becomes
 * FUNC's frame itself: calls enter(), then FUNC's body (FUNC +
 * PT_FENTRY_END, a direct call, so no indirect branch for IBT or
 * retpolines to care about) with the original arguments, then
 * exit(return value, second argument), and returns FUNC's value to
 * FUNC's caller.  Because the body runs below the trampoline, and may
 * sleep there, the trampoline's text must outlive every such call: enter()
 * and exit() count them (fentry.c) and module exit waits for the count to
 * drop to zero.  FUNC's first frame on the stack is then the trampoline's.
 *
 * PT_FEXIT_AFTER_KPROBE(name, func, enter, exit): the same, for a kprobe
 * on FUNC's fentry call site whose handler sets the saved instruction
 * pointer to name and returns 1 (the way fault injection overrides a
 * function).  ftrace then "returns" from the call site into the trampoline
 * with the call site's return address already popped: the stack is that
 * of FUNC's first instruction, and there is nothing to drop.
 *
 * The kernel is built with an 8-byte stack alignment, so the pushes need
 * no padding; objtool validates the frames and writes their ORC entries,
 * so the unwinder walks through the trampolines (sampled call stacks).
 * Declare each trampoline's name as a void function before using it.
 */
#ifndef _PAGETRACE_FENTRY_H
#define _PAGETRACE_FENTRY_H

#include <linux/linkage.h>
#include <linux/objtool.h>
#include <linux/stringify.h>
#include <asm/ibt.h>
#include <asm/nospec-branch.h>
#include <asm/orc_types.h>

/* Where FUNC's body starts: past endbr64 (IBT) and the fentry call site. */
#define PT_FENTRY_CALL_SIZE	5
#define PT_FENTRY_END		(ENDBR_INSN_SIZE + PT_FENTRY_CALL_SIZE)

/* Return-stack accounting (6.12, retbleed=stuff); nothing before 6.2. */
#ifndef CALL_DEPTH_ACCOUNT
#define CALL_DEPTH_ACCOUNT	""
#endif

/* "CFA = rsp + 8": the state at a function's first instruction. */
#ifdef PT_HAVE_UNWIND_HINT_TYPE_FIRST
#define PT_UNWIND_HINT_FUNC	UNWIND_HINT(UNWIND_HINT_TYPE_FUNC, ORC_REG_SP, 8, 0)
#else
#define PT_UNWIND_HINT_FUNC	UNWIND_HINT(ORC_REG_SP, 8, UNWIND_HINT_TYPE_FUNC, 0)
#endif

/*
 * Assembler macros for the trampolines' common parts (each object that
 * includes this header gets its own definition).
 */
asm(".macro pt_tramp_start name\n"
	"	.pushsection .text, \"ax\", @progbits\n"
	"	.type \\name, @function\n"
	"\\name:\n"
	ASM_ENDBR
	".endm\n"
	".macro pt_tramp_end name\n"
	"	.size \\name, .-\\name\n"
	"	.popsection\n"
	".endm\n"
	".macro pt_save_args\n"
	"	pushq %rdi\n	pushq %rsi\n	pushq %rdx\n"
	"	pushq %rcx\n	pushq %r8\n	pushq %r9\n"
	".endm\n");

/* The saved arguments, below the trampoline's frame pointer. */
#define PT_ARG0		"-8(%rbp)"
#define PT_ARG1		"-16(%rbp)"
#define PT_ARG2		"-24(%rbp)"
#define PT_ARG3		"-32(%rbp)"
#define PT_ARG4		"-40(%rbp)"
#define PT_ARG5		"-48(%rbp)"

#define PT_FENTRY_TRAMPOLINE(name, handler)				\
	asm("	pt_tramp_start " __stringify(name) "\n"		\
	    "	pushq %rbp\n"						\
	    "	movq %rsp, %rbp\n"					\
	    CALL_DEPTH_ACCOUNT						\
	    "	pt_save_args\n"					\
	    "	call " __stringify(handler) "\n"			\
	    "	popq %r9\n	popq %r8\n	popq %rcx\n"		\
	    "	popq %rdx\n	popq %rsi\n	popq %rdi\n"		\
	    "	leave\n"						\
	    ASM_RET							\
	    "	pt_tramp_end " __stringify(name) "\n")

/* @drop: what to pop first so that the stack is FUNC's at its entry. */
#define PT_FEXIT_FROM(name, drop, func, enter, exit)			\
	asm("	pt_tramp_start " __stringify(name) "\n"		\
	    drop							\
	    PT_UNWIND_HINT_FUNC						\
	    "	pushq %rbp\n"						\
	    "	movq %rsp, %rbp\n"					\
	    "	pt_save_args\n"					\
	    "	call " __stringify(enter) "\n"				\
	    "	movq " PT_ARG0 ", %rdi\n"				\
	    "	movq " PT_ARG1 ", %rsi\n"				\
	    "	movq " PT_ARG2 ", %rdx\n"				\
	    "	movq " PT_ARG3 ", %rcx\n"				\
	    "	movq " PT_ARG4 ", %r8\n"				\
	    "	movq " PT_ARG5 ", %r9\n"				\
	    "	call " __stringify(func) " + "				\
		   __stringify(PT_FENTRY_END) "\n"			\
	    "	pushq %rax\n"						\
	    "	movq %rax, %rdi\n"					\
	    "	movq " PT_ARG1 ", %rsi\n"				\
	    "	call " __stringify(exit) "\n"				\
	    "	popq %rax\n"						\
	    "	leave\n"						\
	    ASM_RET							\
	    "	pt_tramp_end " __stringify(name) "\n")

#define PT_FEXIT_TRAMPOLINE(name, func, enter, exit)			\
	PT_FEXIT_FROM(name, "	addq $8, %rsp\n", func, enter, exit)
#define PT_FEXIT_AFTER_KPROBE(name, func, enter, exit)			\
	PT_FEXIT_FROM(name, "", func, enter, exit)

#endif /* _PAGETRACE_FENTRY_H */
