/* dynlib.c - optional shared libraries loaded when first needed. */
#include "dynlib.h"

/* (Only a tool built with one of them uses dlopen, and links -ldl.) */
#if defined(CSD_HAVE_CAPSTONE) || defined(CSD_HAVE_LIBDW)
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Is the library named (file name up to ".so") in CSD_TEST_NO_LIB? */
static int refused_for_test(const char *file)
{
	const char *list = getenv("CSD_TEST_NO_LIB");
	if (!list)
		return 0;
	const char *so = strstr(file, ".so");
	size_t base = so ? (size_t)(so - file) : strlen(file);
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		if (n == base && memcmp(p, file, n) == 0)
			return 1;
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

int dynlib_load(struct dynlib *l)
{
	if (l->tried)
		return l->handle != NULL;
	l->tried = 1;
	if (refused_for_test(l->file)) {
		snprintf(l->why, sizeof(l->why), "%s: not loaded (CSD_TEST_NO_LIB)", l->file);
		return 0;
	}
	/* RTLD_NOW: a library that cannot resolve its own symbols fails here,
	 * not in the middle of a run. (It stays loaded: the tool exits soon
	 * after its last use.) */
	l->handle = dlopen(l->file, RTLD_NOW | RTLD_LOCAL);
	if (!l->handle) {
		const char *e = dlerror();
		snprintf(l->why, sizeof(l->why), "%s", e ? e : l->file);
		return 0;
	}
	return 1;
}

dynlib_fn dynlib_sym(struct dynlib *l, const char *name)
{
	if (!l->handle)
		return NULL;
	/* (POSIX: dlsym's result converts to a function pointer.) */
	dynlib_fn f = (dynlib_fn)dlsym(l->handle, name);
	if (!f)
		snprintf(l->why, sizeof(l->why), "%s: no function %s", l->file, name);
	return f;
}
#endif
