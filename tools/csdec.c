/* csdec.c - command-line front end (the packets command lands with the packet layer). */
#include <stdio.h>
#include "csdec.h"

int main(void)
{
	printf("csdec %s\n", csd_version());
	return 0;
}
