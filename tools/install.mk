# install.mk - `make install` and the library example.
#   make install [PREFIX=/usr/local] [DESTDIR=...]   library, header, tool,
#       libcsdec.pc, man page and the Python package under DESTDIR$(PREFIX)
#   make uninstall [PREFIX=...] [DESTDIR=...]
# `make` also builds the example examples/func_count.c (against the static
# library and the public header only) as build/examples/func_count.

PREFIX       ?= /usr/local
BINDIR       ?= $(PREFIX)/bin
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
MANDIR       ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
# The Python package (python/csdec): Debian's python3 looks here for
# packages installed locally.
PYTHONDIR    ?= $(PREFIX)/lib/python3/dist-packages
PY_FILES     := __init__.py _lib.py _perf.py _trace.py
INSTALL      ?= install

.PHONY: install uninstall examples
all: examples
examples: $(B)/examples/func_count

# Only include/ is on the include path: the example must stay on the public API.
$(B)/examples/%: examples/%.c include/csdec.h $(B)/libcsdec.a
	@mkdir -p $(dir $@)
	$(CC) -Iinclude $(CFLAGS) -o $@ $< $(B)/libcsdec.a

# The tests that run `make install` and the example need every `all` target
# built first, so their inner make has nothing left to build (two inner
# makes building the same file at once would race).
test-plain test-san: all
export CSD_SRCDIR := $(CURDIR)

install: all
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) \
	  $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(MANDIR)/man1
	$(INSTALL) -m 755 $(B)/csdec $(DESTDIR)$(BINDIR)/csdec
	$(INSTALL) -m 644 $(B)/libcsdec.a $(DESTDIR)$(LIBDIR)/libcsdec.a
	$(INSTALL) -m 755 $(B)/libcsdec.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libcsdec.so.$(VERSION)
	ln -sf libcsdec.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libcsdec.so.$(SONAME_MAJOR)
	ln -sf libcsdec.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libcsdec.so
	$(INSTALL) -m 644 include/csdec.h $(DESTDIR)$(INCLUDEDIR)/csdec.h
	$(INSTALL) -m 644 docs/csdec.1 $(DESTDIR)$(MANDIR)/man1/csdec.1
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	  -e 's|@VERSION@|$(VERSION)|g' tools/libcsdec.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/libcsdec.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/libcsdec.pc
	$(INSTALL) -d $(DESTDIR)$(PYTHONDIR)/csdec
	$(INSTALL) -m 644 $(addprefix python/csdec/,$(PY_FILES)) $(DESTDIR)$(PYTHONDIR)/csdec/
	printf '# Written by make install: where libcsdec was installed.\nLIBDIR = %s\n' "'$(LIBDIR)'" \
	  > $(DESTDIR)$(PYTHONDIR)/csdec/_paths.py

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/csdec $(DESTDIR)$(LIBDIR)/libcsdec.a $(DESTDIR)$(LIBDIR)/libcsdec.so \
	  $(DESTDIR)$(LIBDIR)/libcsdec.so.$(SONAME_MAJOR) $(DESTDIR)$(LIBDIR)/libcsdec.so.$(VERSION) \
	  $(DESTDIR)$(INCLUDEDIR)/csdec.h $(DESTDIR)$(PKGCONFIGDIR)/libcsdec.pc $(DESTDIR)$(MANDIR)/man1/csdec.1
	rm -f $(addprefix $(DESTDIR)$(PYTHONDIR)/csdec/,$(PY_FILES) _paths.py)
	rm -rf $(DESTDIR)$(PYTHONDIR)/csdec/__pycache__
	-rmdir $(DESTDIR)$(PYTHONDIR)/csdec 2>/dev/null
