/* lab_resultset: a result set's folder as a whole: staged beside --out, swapped in in one rename, the old one
 * removed, so that a reader sees the old set or the new one, never a mix. */
#ifndef LAB_RESULTSET_H
#define LAB_RESULTSET_H

#include <stddef.h>

#include "lab_err.h"

/* The names a result set of the lab holds in its folder (NULL-terminated): an --out folder holding one of them is a
 * previous result set, which a new one replaces (lab_fs_out_check). */
extern const char *const lab_replay_set_names[];

/* Makes a fresh folder beside out_dir (same file system, so it can be swapped in): *stage. LAB_ERR_IO
 * naming the path when it cannot be made. */
lab_status lab_resultset_stage(const char *out_dir, char *stage, size_t len);

/* Replaces out_dir by stage as a whole: entries of out_dir that are not part of a result set (lab_replay_set_names)
 * move into stage first, then the two folders are exchanged in one renameat2(RENAME_EXCHANGE) (or, where the file
 * system lacks it, out_dir is renamed aside and stage renamed in), and the old set is removed. Refuses (LAB_ERR_ARG)
 * an out_dir that holds the current directory. LAB_ERR_IO naming the path on a failed rename. */
lab_status lab_resultset_swap(const char *stage, const char *out_dir);

/* rm -rf path (no symlink followed). */
void lab_resultset_rmrf(const char *path);

#endif
