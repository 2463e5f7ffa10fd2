/* hello.c - the smallest libc program: start-up, one line of output, and
 * exit through the return from main (atexit flushing, exit_group). */
#include <stdio.h>

int main(void)
{
	puts("hello from csdec test program");
	return 0;
}
