/* csdec.c - command-line front end (placeholder until the packets command lands). */
#include <stdio.h>
#include "csdec.h"

int main(void)
{
	printf("csdec %s\n", csd_version());
	return 0;
}
