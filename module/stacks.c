// SPDX-License-Identifier: GPL-2.0
/*
 * Call stacks of sampled allocations (stack_rate=N pages, 0: off).
 *
 * Each CPU draws the pages to its next sample from a uniform distribution
 * on [1, 2N - 1] (mean N, so that no allocation pattern lines up with a
 * fixed period), counts them down with every allocation, and samples the
 * allocation that reaches zero: its call stack is taken and the event word
 * is preceded by a SAMPLE stack word naming it.  With sampling off, the
 * hot path pays one test of a pointer it loads anyway.
 *
 * Each CPU keeps its own table of the stacks it has seen, so the hot path
 * shares nothing with other CPUs:
 *
 *   struct pt_stacks (one vzalloc'ed block per possible CPU)
 *   +-------------------------------------------------+
 *   | nr              entries used                    |
 *   | scratch[]       the stack being taken           |
 *   | slots[2048]     open addressing on the hash:    |
 *   |                 entry index + 1, 0 = empty      |
 *   | ent[1024]       struct pt_stack: hash, depth,   |
 *   |                 frames, the chunk defining it   |
 *   +-------------------------------------------------+
 *
 * Entry i of CPU c has the stack id c * PT_STACK_ENTRIES + i + 1, unique in
 * the session.  Entries are added, never removed, until the session ends;
 * a sample that finds the table full gets id 0 (stack unknown), counted in
 * the CPU's stacks_unknown.
 *
 * Every chunk defines the stacks it names (a DEF word and its frames, the
 * first time the chunk names one), so a lost or overwritten chunk takes no
 * definition with it; @defined remembers which chunk (seq + 1) last did.
 *
 * Concurrency: a CPU's table and its scratch are touched only by that
 * CPU's writer, with interrupts off and its busy flag set (pt_emit(),
 * pt_writer_enter()), which an NMI's event respects.  Nothing else reads
 * them while the probes are attached.
 *
 * Where the stack comes from:
 *  - a kprobe or kretprobe: unwinding from the probe's registers, as perf
 *    does for its kprobe call chains.  At a function's entry the first
 *    frame is the function itself; at its return (a kretprobe) the first
 *    frame is the function, then the return address in its caller.
 *  - a tracepoint: its probe reaches the writer's slow path by tail calls
 *    alone (pt_tp_alloc() -> pt_emit_alloc() -> pt_emit_slow()), so the
 *    slow path's frame holds the return address into the code that fired
 *    the tracepoint, above the frame pointer that code had.  The stack is
 *    unwound from registers made of that frame, past this module's own
 *    frames: the first frame is the tracepoint's caller (the allocator, or
 *    __traceiter_mm_page_alloc() when other tracers share the
 *    tracepoint).  Had the compiler not made those calls tail calls, the
 *    return address would be in this module: then the stack is taken from
 *    here, with this module's frames dropped, as for any other hook
 *    without registers.  Both ways give the same frames; the first skips
 *    the ORC lookups of this module's frames and of the unwinder's own,
 *    about a third of a sample's cost on 7.3 (every frame costs the ORC
 *    unwinder some 450 instructions, one in a module's tables twice that).
 */
#include <asm/unwind.h>
#include <linux/jhash.h>
#include <linux/module.h>
#include <linux/prandom.h>
#include <linux/ptrace.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/stacktrace.h>
#include <linux/string.h>
#include <linux/topology.h>
#include <linux/vmalloc.h>

#include "pagetrace.h"

#define PT_STACK_DEPTH		32
#define PT_STACK_ENTRIES	1024
#define PT_STACK_SLOTS		(2 * PT_STACK_ENTRIES)
/* Room for this module's frames above a tracepoint's stack. */
#define PT_STACK_OWN_FRAMES	8

static_assert(PT_STACK_DEPTH <= PAGETRACE_STACK_MAX_DEPTH);

/*
 * For tests only: take a tracepoint's stacks from here, as where the
 * compiler made no tail calls, so that the selftests see both ways give
 * the same frames (selftests/pagetrace_stacks_test.c).  Read at each
 * sample; 0 in use; only root may read or set it.
 */
static bool pt_stacks_here;
module_param_named(test_stacks_here, pt_stacks_here, bool, 0600);
MODULE_PARM_DESC(test_stacks_here,
		 "Testing: take tracepoints' stacks from the probe, not from its caller's frame (default 0)");

struct pt_stack {
	u64		defined;	/* seq + 1 of the last chunk defining it */
	u32		hash;
	u8		depth;
	bool		cut;		/* deeper than PT_STACK_DEPTH */
	unsigned long	frames[PT_STACK_DEPTH];
};

struct pt_stacks {
	unsigned int	nr;
	unsigned long	scratch[PT_STACK_DEPTH + PT_STACK_OWN_FRAMES];
	u16		slots[PT_STACK_SLOTS];
	struct pt_stack	ent[PT_STACK_ENTRIES];
};

/* A sample adds at most a DEF word, its frames and the SAMPLE word. */
unsigned int pt_stacks_words(void)
{
	return 1 + PT_STACK_DEPTH + 1;
}

/* Pages to the next sample: uniform on [1, 2 * rate - 1]. */
static s64 pt_sample_interval(struct pt_cpu *c)
{
	u32 rate = c->sess->stack_rate;

	if (rate == 1)
		return 1;
	return 1 + prandom_u32_state(&c->rnd) % (2 * rate - 1);
}

/**
 * pt_sample_due - count an allocation down to the next sample
 * @c: this CPU, owned by the caller (interrupts off)
 * @npages: pages allocated
 *
 * Return: true if this allocation is the sample.
 */
bool pt_sample_due(struct pt_cpu *c, unsigned long npages)
{
	c->sample_left -= npages;
	if (likely(c->sample_left > 0))
		return false;
	c->sample_left = pt_sample_interval(c);
	return true;
}

/*
 * The stack from @regs into @f, after the @n frames already there: its
 * depth.  @regs' own address comes first; starting from registers, the
 * unwinder skips their frame.
 */
static unsigned int pt_stack_unwind(unsigned long *f, unsigned int n,
				    struct pt_regs *regs, bool *cut)
{
	struct unwind_state state;

	f[n++] = instruction_pointer(regs);
	for (unwind_start(&state, current, regs, NULL);
	     !unwind_done(&state); unwind_next_frame(&state)) {
		unsigned long addr = unwind_get_return_address(&state);

		if (!addr)
			break;
		if (n == PT_STACK_DEPTH) {
			*cut = true;
			return n;
		}
		f[n++] = addr;
	}
	*cut = false;
	return n;
}

/*
 * Take the current call stack into st->scratch: its depth.  @frame is the
 * writer's slow path's frame: its saved frame pointer, then its return
 * address.
 */
static unsigned int pt_stack_take(struct pt_stacks *st,
				  const struct pt_origin *o,
				  const unsigned long *frame, bool *cut)
{
	unsigned long *f = st->scratch;
	unsigned int n = 0, first;

	if (o && o->regs) {
		if (o->func)
			f[n++] = o->func;
		return pt_stack_unwind(f, n, o->regs, cut);
	}

	/*
	 * Reached by tail calls from outside this module: the registers of
	 * the code that called the hook, as they are when the hook returns
	 * to it: the instruction after the call, the stack pointer above the
	 * return address, the frame pointer as the hook found it (every
	 * function on the way saved and restored it).  The unwinder takes
	 * registers for an interrupted instruction and looks up the ORC entry
	 * of @ip itself, not of @ip - 1 as for a return address: the same
	 * entry, as the call is never the last instruction of its function
	 * here.  Nothing on the way may be a kretprobe's (NOKPROBE_SYMBOL()
	 * in writer.c and handlers.c): its trampoline would be the return
	 * address.  ORC only: a frame-pointer kernel makes no tail calls
	 * (-fno-optimize-sibling-calls), and its unwinder takes registers
	 * differently.
	 */
	if (IS_ENABLED(CONFIG_UNWINDER_ORC) && frame &&
	    !within_module(frame[1], THIS_MODULE) && !READ_ONCE(pt_stacks_here)) {
		struct pt_regs regs = {
			.ip = frame[1],
			.sp = (unsigned long)(frame + 2),
			.bp = frame[0],
			.cs = __KERNEL_CS,
			.flags = X86_EFLAGS_FIXED,
		};

		return pt_stack_unwind(f, 0, &regs, cut);
	}

	/*
	 * From here (a hook without registers whose calls were not all tail
	 * calls): our own frames are dropped.
	 */
	n = stack_trace_save(f + 1, ARRAY_SIZE(st->scratch) - 1, 0);
	*cut = n == ARRAY_SIZE(st->scratch) - 1;
	/* The frames are f[1..n]; f[0] is room for o->func. */
	first = 1;
	while (first <= n && within_module(f[first], THIS_MODULE))
		first++;
	if (o && o->func)
		f[--first] = o->func;
	n = n + 1 - first;
	if (n > PT_STACK_DEPTH) {
		n = PT_STACK_DEPTH;
		*cut = true;
	}
	memmove(f, f + first, n * sizeof(*f));
	return n;
}

/* The entry of stack st->scratch[0, depth), added if new; NULL if full. */
static struct pt_stack *pt_stack_find(struct pt_stacks *st,
				      unsigned int depth, bool cut)
{
	const unsigned long *f = st->scratch;
	u32 hash = jhash2((const u32 *)f, depth * sizeof(*f) / sizeof(u32),
			  depth | cut << 8);
	unsigned int i, slot = hash;
	struct pt_stack *s;

	/* There are more slots than entries: an empty one ends the probe. */
	for (i = 0; i < PT_STACK_SLOTS; i++, slot++) {
		u16 *sp = &st->slots[slot & (PT_STACK_SLOTS - 1)];

		if (!*sp)
			break;
		s = &st->ent[*sp - 1];
		if (s->hash == hash && s->depth == depth && s->cut == cut &&
		    !memcmp(s->frames, f, depth * sizeof(*f)))
			return s;
	}
	if (i == PT_STACK_SLOTS || st->nr == PT_STACK_ENTRIES)
		return NULL;
	s = &st->ent[st->nr++];
	st->slots[slot & (PT_STACK_SLOTS - 1)] = st->nr;
	s->defined = 0;
	s->hash = hash;
	s->depth = depth;
	s->cut = cut;
	memcpy(s->frames, f, depth * sizeof(*f));
	return s;
}

/**
 * pt_write_sample - write the stack words of a sampled allocation
 * @c: this CPU, owned by the caller; pt_stacks_words() words reserved
 * @origin: where the allocation was hooked
 * @frame: the frame of the caller, the writer's slow path
 *
 * The caller writes the event word right after them.
 */
void pt_write_sample(struct pt_cpu *c, const struct pt_origin *origin,
		     const unsigned long *frame)
{
	struct pt_stacks *st = c->stacks;
	struct pt_stack *s = NULL;
	unsigned int depth, i;
	bool cut;
	u32 id = 0;
	u64 word;

	depth = pt_stack_take(st, origin, frame, &cut);
	if (depth)
		s = pt_stack_find(st, depth, cut);
	c->stats.samples++;
	if (!s) {
		c->stats.stacks_unknown++;
	} else {
		id = c->cpu * PT_STACK_ENTRIES + (s - st->ent) + 1;
		if (s->defined != c->seq + 1) {
			s->defined = c->seq + 1;
			word = pagetrace_stack_def_word(id, s->depth, s->cut);
			c->words[c->len++] = cpu_to_le64(word);
			for (i = 0; i < s->depth; i++) {
				word = pagetrace_frame_word(s->frames[i]);
				c->words[c->len++] = cpu_to_le64(word);
			}
		}
	}
	c->words[c->len++] = cpu_to_le64(pagetrace_sample_word(id));
}

/**
 * pt_stacks_alloc - set up sampling for a session, if stack_rate asks
 * @sess: the session, its CPUs set up, the probes not yet attached
 *
 * Return: 0 or -ENOMEM.
 */
int pt_stacks_alloc(struct pt_session *sess)
{
	unsigned int cpu;

	if (!sess->stack_rate)
		return 0;
	/* The CPUs pt_buffers_alloc() set up: the possible ones. */
	for_each_possible_cpu(cpu) {
		struct pt_cpu *c = &sess->cpus[cpu];

		c->stacks = vzalloc_node(sizeof(*c->stacks), cpu_to_node(cpu));
		if (!c->stacks)
			goto free_stacks;
		prandom_seed_state(&c->rnd, get_random_u64());
		c->sample_left = pt_sample_interval(c);
	}
	return 0;

free_stacks:
	pt_stacks_free(sess);
	return -ENOMEM;
}

/* Free the tables; the probes are gone. */
void pt_stacks_free(struct pt_session *sess)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		vfree(sess->cpus[cpu].stacks);
		sess->cpus[cpu].stacks = NULL;
	}
}

/*
 * The header record.  The anchor is a function every kernel exports, so
 * that a symbol table can be checked against this boot's addresses.
 */
void pt_stacks_record(struct pagetrace_rec_stacks *rec, unsigned int rate)
{
	memset(rec, 0, sizeof(*rec));
	rec->rate = pt_le32(rate);
	rec->max_depth = pt_le32(PT_STACK_DEPTH);
	rec->anchor_addr = pt_le64((unsigned long)schedule);
	strscpy((char *)rec->anchor_name, "schedule", sizeof(rec->anchor_name));
}
