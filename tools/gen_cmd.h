/* gen_cmd.h - commands of the csdec tool that live in their own files. */
#ifndef CSD_GEN_CMD_H
#define CSD_GEN_CMD_H

/* `csdec gen ...`: argv[0] is "gen". Returns the exit status. */
int csd_cmd_gen(int argc, char **argv);

#endif
