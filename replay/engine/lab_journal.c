/* lab_journal: a replay's finished cases on disk as each finishes (lab_journal.h). */
#define _GNU_SOURCE
#include "lab_journal.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab_clock.h"
#include "lab_resultset.h"
#include "lab_testknobs.h"

struct lab_journal {
    char out[PATH_MAX];
    char stage[PATH_MAX];
    char path[PATH_MAX + 32];
    int fd;
    double synced_at;
    size_t cases;
    lab_status failed; /* the first failure (LAB_OK: none) */
    int swapped;       /* the set was swapped in, the journal with it */
    size_t test_kill;  /* tests only: SIGKILL in the middle of this case's line (0: never) */
};

/* Tests only: $LAB_JOURNAL_TEST_KILL=K stops the process with SIGKILL half way through the K-th case's line (from 1),
 * as a kill can end a write(2) part way. Inert unless set. */
static size_t lab_journal_test_kill(void)
{
    const char *e = getenv(LAB_TESTKNOB_JOURNAL_KILL);
    return e && *e ? (size_t)strtoull(e, NULL, 10) : 0;
}

/* write(2) of all of buf, again after a short write or EINTR (a kill cuts it short; nothing then runs after it). */
static int lab_journal_write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return 0;
        buf += w;
        len -= (size_t)w;
    }
    return 1;
}

/* Syncs the folder that holds path's entry, so that the entry outlives a crash of the machine. */
static void lab_journal_sync_dir(const char *dir)
{
    int d = open(dir, O_RDONLY | O_DIRECTORY);
    if (d >= 0) fsync(d), close(d);
}

lab_status lab_journal_open(const char *out_dir, const cJSON *header, lab_journal **out)
{
    *out = NULL;
    lab_journal *j = calloc(1, sizeof *j);
    if (!j) return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory for its journal", out_dir);
    snprintf(j->out, sizeof j->out, "%s", out_dir);
    lab_status st = lab_resultset_stage(out_dir, j->stage, sizeof j->stage);
    if (st != LAB_OK) {
        free(j);
        return st;
    }
    snprintf(j->path, sizeof j->path, "%s/" LAB_JOURNAL_NAME, j->stage);
    char *head = cJSON_PrintUnformatted(header);
    j->fd = open(j->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    int good = head && j->fd >= 0 && lab_journal_write_all(j->fd, head, strlen(head)) &&
               lab_journal_write_all(j->fd, "\n", 1) && fdatasync(j->fd) == 0;
    int er = errno;
    cJSON_free(head);
    if (!good) {
        if (j->fd >= 0) close(j->fd);
        lab_resultset_rmrf(j->stage);
        st = head ? lab_err_set(LAB_ERR_IO, "%s: cannot write the replay's journal: %s", j->path, strerror(er))
                  : lab_err_set(LAB_ERR_NOMEM, "%s: out of memory for its journal", j->path);
        free(j);
        return st;
    }
    lab_journal_sync_dir(j->stage);
    j->synced_at = lab_clock_now();
    j->test_kill = lab_journal_test_kill();
    *out = j;
    return LAB_OK;
}

const char *lab_journal_stage(const lab_journal *j) { return j->stage; }

int lab_journal_failed(const lab_journal *j) { return j && j->failed != LAB_OK; }

/* Keeps the first failure and says it once. */
static lab_status lab_journal_fail(lab_journal *j, lab_status st)
{
    j->failed = st;
    fprintf(stderr, "lab replay: %s: the cases that finish from now on are kept only when the result set is written\n",
            lab_err_msg());
    return st;
}

lab_status lab_journal_case(lab_journal *j, const lab_case_record *rec, const lab_results_cmd *cmd)
{
    if (!j || rec->o.not_run) return LAB_OK;
    if (j->failed != LAB_OK) return j->failed;
    size_t len = 0;
    char *line = lab_results_case_line(rec, cmd, &len);
    if (!line) return lab_journal_fail(j, lab_err_set(LAB_ERR_NOMEM, "%s: out of memory for a case's line", j->path));
    if (j->test_kill && j->cases + 1 == j->test_kill) {
        lab_journal_write_all(j->fd, line, len / 2);
        raise(SIGKILL);
    }
    int good = lab_journal_write_all(j->fd, line, len);
    int er = errno;
    free(line);
    if (!good) return lab_journal_fail(j, lab_err_set(LAB_ERR_IO, "%s: cannot write: %s", j->path, strerror(er)));
    j->cases++;
    double now = lab_clock_now();
    if (now - j->synced_at >= LAB_JOURNAL_SYNC_S) {
        j->synced_at = now;
        if (fdatasync(j->fd) != 0 && errno != EINVAL)
            return lab_journal_fail(j, lab_err_set(LAB_ERR_IO, "%s: cannot sync: %s", j->path, strerror(errno)));
    }
    return LAB_OK;
}

void lab_journal_swapped(lab_journal *j, const char *out_dir)
{
    if (!j) return;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/" LAB_JOURNAL_NAME, out_dir);
    unlink(path);
    j->swapped = 1;
}

void lab_journal_close(lab_journal *j)
{
    if (!j) return;
    close(j->fd);
    if (!j->swapped && !j->cases) lab_resultset_rmrf(j->stage); /* nothing finished: nothing to keep */
    if (!j->swapped && j->cases) {
        fprintf(stderr, "lab replay: %zu finished case%s kept in %s: `lab replay --resume %s` completes the replay\n",
                j->cases, j->cases == 1 ? "" : "s", j->path, j->out);
    }
    free(j);
}
