# jobs.mk - the tool decodes sources on threads (--jobs, tools/jobs.c).
TOOL_CFLAGS += -pthread
TOOL_LDLIBS += -pthread
