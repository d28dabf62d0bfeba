/* lab_fs: file helpers: atomic writes (temporary file then rename), whole-file reads, mkdir -p. */
#ifndef LAB_FS_H
#define LAB_FS_H

#include <stddef.h>

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes len bytes to path atomically: into "path.tmp.PID", fsync, then rename over path, so a
 * reader sees the old file or the whole new one, never a truncated one. LAB_ERR_IO names the path. */
lab_status lab_fs_write_atomic(const char *path, const void *data, size_t len);

/* Reads a whole file into a malloc'ed buffer with a trailing NUL (not counted in *len).
 * LAB_ERR_IO (naming the path) if it cannot be opened or read; caller frees *data. */
lab_status lab_fs_read_all(const char *path, char **data, size_t *len);

/* mkdir -p; existing directories are fine. LAB_ERR_IO names the component that failed. */
lab_status lab_fs_mkdirs(const char *path);

/* 1 if path exists (any type), else 0. */
int lab_fs_exists(const char *path);

/* Whether path may be an output folder given by flag (e.g. "--out"): a missing path, an empty folder, or a folder that
 * holds one of members (a NULL-terminated list of a previous result set's names; its other entries are kept by the
 * writer). Anything else (a file, a link to one, a folder of other things) is LAB_ERR_ARG naming it, and nothing
 * is touched. */
lab_status lab_fs_out_check(const char *flag, const char *path, const char *const *members);
/* Number of entries in directory dir whose name ends with suffix (0 if dir cannot be read). */
int lab_fs_count_suffix(const char *dir, const char *suffix);

#ifdef __cplusplus
}
#endif

#endif
