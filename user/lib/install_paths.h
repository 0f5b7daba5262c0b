/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where `make install` puts the files the binary looks for: the Makefile
 * compiles the objects that use these with -DTTF_PREFIX='"$(PREFIX)"' (and
 * rebuilds them when PREFIX changes); without it (fuzz builds, other
 * compilers) the default is make's, /usr/local. Lookups also try the same
 * layout relative to the binary (BINARY/../share/ttftrace/...), so that a
 * tree installed with DESTDIR, or moved whole, finds its own files.
 */
#ifndef TTFTRACE_INSTALL_PATHS_H
#define TTFTRACE_INSTALL_PATHS_H

#ifndef TTF_PREFIX
#define TTF_PREFIX "/usr/local"
#endif

/* engine profiles, NAME.ini (profiles/ in the source tree) */
#define TTF_PROFILE_DIR TTF_PREFIX "/share/ttftrace/profiles"
#define TTF_PROFILE_DIR_FROM_BIN "../share/ttftrace/profiles"
/* the CUPTI collector, libttftrace-cupti.so */
#define TTF_LIB_DIR TTF_PREFIX "/lib/ttftrace"
#define TTF_LIB_DIR_FROM_BIN "../lib/ttftrace"

#endif /* TTFTRACE_INSTALL_PATHS_H */
