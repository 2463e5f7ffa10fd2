/* cmd_profile.c - `csdec profile` (placeholder until written). */
#include "cli.h"

int csd_cmd_profile(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	die_usage("profile: not yet");
	return EXIT_USAGE;
}
