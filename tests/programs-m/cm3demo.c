/*
 * cm3demo.c - bare-metal Cortex-M3 program for qemu-system-arm -M
 * lm3s6965evb, the Cortex-M test subject of csdec (see README and
 * docs/cortex-m.md). Thread mode runs a loop with calls, a switch (a TBB
 * jump table), IT blocks and calls through a function pointer, while:
 *   - SysTick (exception 15) fires periodically and, every 4th time, pends
 *     PendSV (14), which tail-chains after SysTick as it has the lowest
 *     priority;
 *   - the loop calls SVC (11) whose handler runs long enough that SysTick,
 *     of higher priority, sometimes preempts it (nested exceptions);
 *   - the loop pends external interrupt 40 (exception 56) through the
 *     NVIC's software trigger register: a number the ETM encodes in two
 *     exception bytes.
 * At the end the program disables interrupts, prints its own exception
 * counts through semihosting and exits through semihosting SYS_EXIT, so the
 * run ends by itself. The counts let a test compare what the program saw
 * with what the execution log shows.
 */
typedef unsigned int u32;
typedef unsigned char u8;

#define REG(a)          (*(volatile u32 *)(a))
#define SYST_CSR        REG(0xE000E010u)   /* SysTick control and status */
#define SYST_RVR        REG(0xE000E014u)   /* SysTick reload value */
#define SYST_CVR        REG(0xE000E018u)   /* SysTick current value */
#define NVIC_ISER1      REG(0xE000E104u)   /* enables IRQs 32..63 */
#define NVIC_IPR(n)     (*(volatile u8 *)(0xE000E400u + (n)))
#define NVIC_STIR       REG(0xE000EF00u)   /* software-triggered interrupt */
#define SCB_ICSR        REG(0xE000ED04u)
#define SCB_SHPR2       REG(0xE000ED1Cu)   /* [31:24] SVCall priority */
#define SCB_SHPR3       REG(0xE000ED20u)   /* [23:16] PendSV, [31:24] SysTick */

#define ICSR_PENDSVSET  (1u << 28)
#define ICSR_RETTOBASE  (1u << 11)         /* 0: another exception is active */

#define SOFT_IRQ        40u                /* external interrupt 40 = exception 56 */
#define LOOP_COUNT      256u
/* SysTick period in SysTick clock ticks (the CPU clock with CLKSOURCE=1).
 * With -icount shift=0 qemu's virtual clock advances 1 ns per instruction;
 * the value gives a few dozen interrupts over the loop (README). */
#ifndef SYSTICK_RELOAD
#define SYSTICK_RELOAD  800u
#endif

/* Semihosting operations and SYS_EXIT reasons (ARM semihosting spec). */
#define SYS_WRITE0                      0x04u
#define SYS_EXIT                        0x18u
#define ADP_STOPPED_APPLICATION_EXIT    0x20026u
#define ADP_STOPPED_RUNTIME_ERROR       0x20023u

u32 fold_it(u32 x, u32 lo, u32 hi);
u32 semihost(u32 op, const void *arg);

void reset_handler(void);
void default_handler(void);
void svc_handler(void);
void pendsv_handler(void);
void systick_handler(void);
void soft_irq_handler(void);
int main(void);

volatile u32 n_systick, n_svc, n_pendsv, n_irq, n_nested;
static volatile u32 svc_work;

/* ---- thread-mode work ---------------------------------------------- */

__attribute__((noinline)) static u32 op_add(u32 a, u32 b) { return a + b; }
__attribute__((noinline)) static u32 op_xor(u32 a, u32 b) { return a ^ (b << 1); }
__attribute__((noinline)) static u32 op_mul(u32 a, u32 b) { return a * 33u + b; }
__attribute__((noinline)) static u32 op_rot(u32 a, u32 b) { return ((a >> 3) | (a << 29)) ^ b; }

typedef u32 (*binop)(u32, u32);
static const binop ops[4] = { op_add, op_xor, op_mul, op_rot };

/* Nine dense cases: gcc makes this a TBB jump table. */
__attribute__((noinline)) static u32 classify(u32 v)
{
	switch (v % 9u) {
	case 0: return v + 11u;
	case 1: return v * 3u;
	case 2: return v ^ 0x55u;
	case 3: return v - 7u;
	case 4: return v << 2;
	case 5: return v >> 1;
	case 6: return ~v;
	case 7: return v | 0x100u;
	default: return v & 0xF0u;
	}
}

/* Conditional selects: gcc emits IT blocks for these. */
__attribute__((noinline)) static u32 distance(u32 a, u32 b)
{
	return a > b ? a - b : b - a;
}

__attribute__((noinline)) static u32 clamp_byte(u32 v)
{
	if (v > 0xC0u)
		v = 0xC0u;
	else if (v < 0x10u)
		v = 0x10u;
	return v;
}

static inline void svc_call(void)
{
	__asm__ volatile("svc #0" ::: "memory");
}

static void put_hex(char *p, u32 v)
{
	for (int i = 7; i >= 0; i--) {
		u32 d = v & 15u;
		p[i] = (char)(d < 10u ? '0' + d : 'a' + d - 10u);
		v >>= 4;
	}
}

/* "name=XXXXXXXX " into buf at *pos. */
static void put_field(char *buf, u32 *pos, const char *name, u32 v)
{
	while (*name)
		buf[(*pos)++] = *name++;
	buf[(*pos)++] = '=';
	put_hex(buf + *pos, v);
	*pos += 8;
	buf[(*pos)++] = ' ';
}

__attribute__((noreturn)) static void exit_with(u32 reason)
{
	for (;;)
		semihost(SYS_EXIT, (const void *)reason);
}

int main(void)
{
	u32 acc = 1;

	for (u32 i = 0; i < LOOP_COUNT; i++) {
		acc = ops[i & 3u](acc, classify(i));
		acc = fold_it(acc, 0x40u, 0x4000u);
		acc += distance(acc & 0xFFu, clamp_byte(i * 7u));
		if (i % 16u == 15u)
			svc_call();
		if (i % 24u == 23u)
			NVIC_STIR = SOFT_IRQ;
	}

	/* Nothing is taken after this, so the counts are final. */
	__asm__ volatile("cpsid i" ::: "memory");
	SYST_CSR = 0;

	char line[128];
	u32 pos = 0;
	const char *tag = "cm3demo ";
	while (*tag)
		line[pos++] = *tag++;
	put_field(line, &pos, "systick", n_systick);
	put_field(line, &pos, "svc", n_svc);
	put_field(line, &pos, "pendsv", n_pendsv);
	put_field(line, &pos, "irq", n_irq);
	put_field(line, &pos, "nested", n_nested);
	put_field(line, &pos, "acc", acc);
	line[pos - 1] = '\n';
	line[pos] = 0;
	semihost(SYS_WRITE0, line);
	exit_with(ADP_STOPPED_APPLICATION_EXIT);
}

/* ---- exception handlers -------------------------------------------- */

void systick_handler(void)
{
	n_systick++;
	if (!(SCB_ICSR & ICSR_RETTOBASE))
		n_nested++;             /* preempted another handler */
	if (n_systick % 4u == 0)
		SCB_ICSR = ICSR_PENDSVSET;
}

/* Long enough for SysTick to land inside it now and then. */
void svc_handler(void)
{
	n_svc++;
	u32 s = svc_work;
	for (u32 k = 0; k < 24u; k++)
		s += classify(k + s);
	svc_work = s;
}

void pendsv_handler(void)
{
	n_pendsv++;
	svc_work ^= n_pendsv;
}

void soft_irq_handler(void)
{
	n_irq++;
}

/* Any other exception is a bug in this program: say so and fail. */
void default_handler(void)
{
	semihost(SYS_WRITE0, "cm3demo: unexpected exception\n");
	exit_with(ADP_STOPPED_RUNTIME_ERROR);
}

/* ---- start-up ------------------------------------------------------ */

extern u32 _stack_top, _data_start, _data_end, _data_load, _bss_start, _bss_end;

void reset_handler(void)
{
	u32 *src = &_data_load;
	for (u32 *dst = &_data_start; dst < &_data_end;)
		*dst++ = *src++;
	for (u32 *dst = &_bss_start; dst < &_bss_end;)
		*dst++ = 0;

	/* Priorities (lower is more urgent; the LM3S6965 keeps the top 3
	 * bits): SysTick preempts the interrupt and SVC, PendSV is last. */
	SCB_SHPR3 = (0x20u << 24) | (0xE0u << 16);
	SCB_SHPR2 = 0x60u << 24;
	NVIC_IPR(SOFT_IRQ) = 0x40u;
	NVIC_ISER1 = 1u << (SOFT_IRQ - 32u);

	SYST_RVR = SYSTICK_RELOAD - 1u;
	SYST_CVR = 0;
	SYST_CSR = 7;   /* CLKSOURCE = processor clock, TICKINT, ENABLE */

	main();
	exit_with(ADP_STOPPED_RUNTIME_ERROR);
}

/* Vector table at address 0: initial SP, then handler addresses (Thumb
 * bit set) indexed by exception number. 16 system entries and 48 external
 * interrupts; every handler this program expects has its own address, so
 * an entry address names one exception. */
#define NUM_VECTORS 64
__attribute__((section(".vectors"), used))
const u32 vector_table[NUM_VECTORS] = {
	[0] = (u32)&_stack_top,
	[1] = (u32)reset_handler,
	[2 ... 6] = (u32)default_handler,       /* NMI, faults */
	[11] = (u32)svc_handler,
	[12] = (u32)default_handler,            /* DebugMonitor */
	[14] = (u32)pendsv_handler,
	[15] = (u32)systick_handler,
	[16 ... 16 + SOFT_IRQ - 1] = (u32)default_handler,
	[16 + SOFT_IRQ] = (u32)soft_irq_handler,
	[16 + SOFT_IRQ + 1 ... NUM_VECTORS - 1] = (u32)default_handler,
};
