/* base/version.h - the release version and the git commit the binary was built from, for
 * `fleetplane version` and fleetplane_build_info{version,commit} (base/procstat.h). */
#ifndef FP_BASE_VERSION_H
#define FP_BASE_VERSION_H

#define FP_VERSION "0.1.0"

/* The short git commit hash of the tree the binary was built from (the Makefile passes it to
 * version.c as FP_COMMIT from `git rev-parse --short HEAD`), or "unknown" when it was built
 * outside a git tree (a release tarball). A static string. */
const char *fp_commit(void);

#endif
