/* indirect.c - indirect calls and branches: a table of function pointers,
 * "objects" with method pointers, callbacks from libc (qsort, bsearch)
 * into this program, and a state machine whose switch is a jump table
 * (ADD pc in ARM with Debian's default PIE code, TBB or a computed BX in
 * Thumb). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*binop_fn)(int, int);

static int op_add(int a, int b) { return a + b; }
static int op_sub(int a, int b) { return a - b; }
static int op_mul(int a, int b) { return a * b; }
static int op_xor(int a, int b) { return a ^ b; }
static int op_max(int a, int b) { return a > b ? a : b; }

/* volatile: GCC must load the pointer and call through it */
static binop_fn volatile ops[] = { op_add, op_sub, op_mul, op_xor, op_max };

struct shape {
	const struct shape_ops *ops;
	int a, b;
};

struct shape_ops {
	const char *name;
	int (*area)(const struct shape *);
	int (*perimeter)(const struct shape *);
};

static int rect_area(const struct shape *s) { return s->a * s->b; }
static int rect_perimeter(const struct shape *s) { return 2 * (s->a + s->b); }
static int tri_area(const struct shape *s) { return s->a * s->b / 2; }
static int tri_perimeter(const struct shape *s) { return s->a + s->b + (s->a + s->b) * 7 / 10; }
static int sq_area(const struct shape *s) { return s->a * s->a; }
static int sq_perimeter(const struct shape *s) { return 4 * s->a; }

static const struct shape_ops rect_ops = { "rect", rect_area, rect_perimeter };
static const struct shape_ops tri_ops = { "tri", tri_area, tri_perimeter };
static const struct shape_ops sq_ops = { "square", sq_area, sq_perimeter };

static int cmp_int(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;
	return (a > b) - (a < b);
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* A tokenizer state machine: counts letters, digit values, punctuation,
 * quoted characters and comment characters of a text. Each state does
 * different work, so the switch stays a jump table even at -O2. */
enum state { S_SPACE, S_WORD, S_NUMBER, S_PUNCT, S_QUOTE, S_ESCAPE, S_COMMENT, S_END };

struct tally {
	int blanks, letters, number_sum, punct_mix, quoted, escapes, comment_chars;
};

static enum state after_plain(char c, enum state st)
{
	if (c == 0) return S_END;
	if (c == '"') return S_QUOTE;
	if (c == '#') return S_COMMENT;
	if (c >= '0' && c <= '9') return st == S_WORD ? S_WORD : S_NUMBER;
	if ((c | 32) >= 'a' && (c | 32) <= 'z') return S_WORD;
	if (c == ' ' || c == '\n') return S_SPACE;
	return S_PUNCT;
}

__attribute__((noinline)) static int tokenize(const char *text, struct tally *t)
{
	enum state st = S_SPACE;
	int steps = 0, digit = 0;

	for (const char *p = text; st != S_END; p++) {
		char c = *p;
		steps++;
		switch (st) {
		case S_SPACE:
			t->blanks++;
			st = after_plain(c, st);
			break;
		case S_WORD:
			t->letters++;
			st = after_plain(c, st);
			break;
		case S_NUMBER:
			digit = digit * 10 + (p[-1] - '0');
			st = after_plain(c, st);
			if (st != S_NUMBER) {
				t->number_sum += digit;
				digit = 0;
			}
			break;
		case S_PUNCT:
			t->punct_mix = t->punct_mix * 3 + p[-1];
			st = after_plain(c, st);
			break;
		case S_QUOTE:
			t->quoted++;
			st = c == 0 ? S_END : c == '\\' ? S_ESCAPE : c == '"' ? S_SPACE : S_QUOTE;
			break;
		case S_ESCAPE:
			t->escapes++;
			st = c ? S_QUOTE : S_END;
			break;
		case S_COMMENT:
			t->comment_chars++;
			st = c == 0 ? S_END : c == '\n' ? S_SPACE : S_COMMENT;
			break;
		case S_END:
			break;
		}
	}
	return steps;
}

int main(void)
{
	int numbers[40];
	const char *words[] = { "pear", "apple", "fig", "kiwi", "banana", "cherry", "date", "lime" };
	struct shape shapes[] = { { &rect_ops, 3, 4 }, { &tri_ops, 6, 5 }, { &sq_ops, 7, 0 }, { &rect_ops, 10, 2 } };
	static const char text[] = "int x = 42; # the answer\n"
	                           "say \"hello \\\"world\\\"\" 3 times, then 7b or c9.\n";
	struct tally tally = { 0 };
	int acc = 1, key = 27;
	int *found;

	for (int i = 0; i < 200; i++)
		acc = ops[i % 5](acc, i + 3) & 0xfffff;
	printf("ops: %d\n", acc);

	for (unsigned i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
		printf("%s: area %d perimeter %d\n", shapes[i].ops->name,
		       shapes[i].ops->area(&shapes[i]), shapes[i].ops->perimeter(&shapes[i]));

	for (int i = 0; i < 40; i++)
		numbers[i] = (i * 37 + 11) % 41;
	qsort(numbers, 40, sizeof numbers[0], cmp_int);
	found = bsearch(&key, numbers, 40, sizeof numbers[0], cmp_int);
	printf("sorted: %d %d %d, %d at %d\n", numbers[0], numbers[20], numbers[39], key,
	       found ? (int)(found - numbers) : -1);

	qsort(words, sizeof words / sizeof words[0], sizeof words[0], cmp_str);
	printf("words: %s %s %s\n", words[0], words[1], words[7]);

	printf("tokenize: %d steps, %d %d %d %d %d %d %d\n", tokenize(text, &tally), tally.blanks,
	       tally.letters, tally.number_sum, tally.punct_mix, tally.quoted, tally.escapes,
	       tally.comment_chars);
	return 0;
}
