/* dynlib.h - optional shared libraries of the tool, loaded with dlopen
 * when first needed instead of linked: a run that does not use one does
 * not pay for loading and relocating it (and its dependencies). When one
 * cannot be loaded, its user works on without it. */
#ifndef CSD_DYNLIB_H
#define CSD_DYNLIB_H

#include <stddef.h>

struct dynlib {
	const char *file;      /* the file name given to dlopen (the library's SONAME) */
	void *handle;          /* NULL: not loaded */
	int tried;
	char why[256];         /* why it is not there, once tried and not loaded */
};

/*
 * Load l->file once (later calls return the first answer): 1 when
 * loaded, else 0 with l->why set. For the tests, the environment variable
 * CSD_TEST_NO_LIB, a comma-separated list of library names without
 * ".so..." (e.g. "libdw,libcapstone"), makes the load of those fail as
 * if they were not installed.
 */
int dynlib_load(struct dynlib *l);

/* A function of the loaded library l, or NULL. A missing one unloads
 * nothing but sets l->why (and the caller treats the library as absent). */
typedef void (*dynlib_fn)(void);
dynlib_fn dynlib_sym(struct dynlib *l, const char *name);

#endif
