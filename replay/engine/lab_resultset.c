/* lab_resultset: a result set's folder staged and swapped in as a whole (lab_resultset.h). */
#define _GNU_SOURCE /* nftw, renameat2 flags */
#include "lab_resultset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#include "lab_fs.h"

/* The files of a result set in an --out folder: the swap replaces these; anything else there is moved
 * into the new set untouched. journal.jsonl (lab_journal.h) comes in with the set and is removed just after the swap:
 * one a kill left there is the set's own. */
const char *const lab_replay_set_names[] = {"results.jsonl", "summary.json", "junit.xml", "results.tap", "plots",
                                           "report.json", "index.html", "journal.jsonl", NULL};

static int lab_resultset_member(const char *name)
{
    for (size_t i = 0; lab_replay_set_names[i]; ++i)
        if (!strcmp(name, lab_replay_set_names[i])) return 1;
    return 0;
}

static int lab_resultset_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path) != 0 && errno != ENOENT ? -1 : 0;
}

/* rm -rf path (no symlink followed). */
void lab_resultset_rmrf(const char *path) { nftw(path, lab_resultset_rm_one, 16, FTW_DEPTH | FTW_PHYS); }

/* Makes a fresh folder beside out_dir (same file system, so it can be swapped in): *stage. LAB_ERR_IO
 * naming the path when it cannot be made. */
lab_status lab_resultset_stage(const char *out_dir, char *stage, size_t len)
{
    size_t n = strlen(out_dir);
    while (n > 1 && out_dir[n - 1] == '/') --n;
    if (snprintf(stage, len, "%.*s.new-XXXXXX", (int)n, out_dir) >= (int)len)
        return lab_err_set(LAB_ERR_ARG, "%s: path too long", out_dir);
    if (!mkdtemp(stage))
        return lab_err_set(LAB_ERR_IO, "%s: cannot make the new result folder %s beside it: %s", out_dir, stage,
                           strerror(errno));
    return LAB_OK;
}

/* Replaces out_dir by stage as a whole: entries of out_dir that are not part of a result set move into
 * stage first, then the two folders are exchanged in one renameat2(RENAME_EXCHANGE) (or, where the file
 * system lacks it, out_dir is renamed aside and stage renamed in), and the old set is removed. A reader
 * sees the old set or the new one, never a mix. Refuses (LAB_ERR_ARG) an out_dir that holds the current
 * directory. LAB_ERR_IO naming the path on a failed rename. */
lab_status lab_resultset_swap(const char *stage, const char *out_dir)
{
    char rout[PATH_MAX], rcwd[PATH_MAX];
    if (realpath(out_dir, rout) && getcwd(rcwd, sizeof rcwd)) {
        size_t k = strlen(rout);
        if (!strncmp(rcwd, rout, k) && (rcwd[k] == 0 || rcwd[k] == '/' || k == 1))
            return lab_err_set(LAB_ERR_ARG, "--out %s holds the current directory: choose a folder for results",
                               out_dir);
    }
    DIR *d = opendir(out_dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || lab_resultset_member(e->d_name)) continue;
            char from[PATH_MAX], to[PATH_MAX];
            snprintf(from, sizeof from, "%s/%s", out_dir, e->d_name);
            snprintf(to, sizeof to, "%s/%s", stage, e->d_name);
            if (rename(from, to) != 0) {
                int er = errno;
                closedir(d);
                return lab_err_set(LAB_ERR_IO, "%s: cannot keep %s in the new result set: %s", out_dir, from,
                                   strerror(er));
            }
        }
        closedir(d);
    }
    if (syscall(SYS_renameat2, AT_FDCWD, stage, AT_FDCWD, out_dir, RENAME_EXCHANGE) == 0) {
        lab_resultset_rmrf(stage); /* now the old set */
        return LAB_OK;
    }
    if (errno == ENOENT && !lab_fs_exists(out_dir)) {
        if (rename(stage, out_dir) == 0) return LAB_OK;
        return lab_err_set(LAB_ERR_IO, "%s: cannot move the new result set in from %s: %s", out_dir, stage,
                           strerror(errno));
    }
    if (errno != EINVAL && errno != ENOSYS)
        return lab_err_set(LAB_ERR_IO, "%s: cannot swap in the new result set from %s: %s", out_dir, stage,
                           strerror(errno));
    char old[PATH_MAX];
    snprintf(old, sizeof old, "%s.old-XXXXXX", stage);
    if (!mkdtemp(old) || rmdir(old) != 0 || rename(out_dir, old) != 0)
        return lab_err_set(LAB_ERR_IO, "%s: cannot move the old result set aside: %s", out_dir, strerror(errno));
    if (rename(stage, out_dir) != 0) {
        int er = errno;
        rename(old, out_dir);
        return lab_err_set(LAB_ERR_IO, "%s: cannot move the new result set in from %s: %s", out_dir, stage,
                           strerror(er));
    }
    lab_resultset_rmrf(old);
    return LAB_OK;
}
