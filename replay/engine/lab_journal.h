/* lab_journal: a replay's finished cases on disk the moment each finishes, whatever ends the process: journal.jsonl in
 * the result set's staging folder beside --out (lab_resultset.h), its first line what the replay runs, then one line a
 * finished case, as results.jsonl holds it. `lab replay --resume DIR` completes a replay from what it left
 * (lab_resume.h). */
#ifndef LAB_JOURNAL_H
#define LAB_JOURNAL_H

#include <stddef.h>

#include "lab_err.h"
#include "lab_results.h"

/* Contract.
 * - What survives: every case lab_journal_case returned from is in the journal whatever then ends the process
 *   (SIGKILL, scancel, a batch job's time limit, a dead MPI rank, the OOM killer): its line was handed to the kernel
 *   whole, in one write(2) to a file opened O_APPEND, and the page cache outlives the process. A crash of the machine
 *   or a power cut can take what was written since the last sync: the journal is synced (fdatasync) at most every
 *   LAB_JOURNAL_SYNC_S, when a case finishes that long after the last sync, so that a cut costs at most that much of
 *   the run and a sync per case (a disk flush each, tens of them a second on a busy replay) is never paid.
 * - What a reader sees: a header line, then whole case lines, a case's later line replacing an earlier one (a rerun
 *   after a device error). A write that a kill cuts part way (Linux stops a write of more than a page between pages
 *   when a fatal signal is pending) leaves a last line without its newline: a reader takes only lines that end in one.
 * - Errors: a journal that cannot be made is LAB_ERR_IO naming the path, before any case runs; one that cannot be
 *   written later is said once on stderr, naming the file (the replay goes on and its set is still written: the
 *   promise to keep what finished then rests on the set alone), and lab_journal_failed says so.
 * - Tests only: $LAB_JOURNAL_TEST_KILL=K makes the process SIGKILL itself half way through the K-th case's line (from
 *   1), as a kill can cut a write; inert unless set. */

#define LAB_JOURNAL_NAME                                                                                               \
    "journal.jsonl" /* in the staging folder, and in --out between the swap and lab_journal_close */
#define LAB_JOURNAL_SYNC_S 1.0           /* the most seconds of finished cases a power cut can take */

typedef struct lab_journal lab_journal;

/* Makes a fresh staging folder beside out_dir (lab_resultset_stage; out_dir's parent must exist) and journal.jsonl in
 * it, whose first line is header (a JSON object: what the replay runs, so that lab_resume can read it back), synced
 * with the folder. *out gets the journal (lab_journal_close releases it). LAB_ERR_IO (or LAB_ERR_ARG for a path too
 * long) naming the path; nothing is left behind on error. */
lab_status lab_journal_open(const char *out_dir, const struct cJSON *header, lab_journal **out);

/* The staging folder the journal is in: the result set is written there and swapped in (lab_resultset_swap), the
 * journal with it. */
const char *lab_journal_stage(const lab_journal *j);

/* Appends one finished case, its results.jsonl line (lab_results_case_line, spelled by cmd) in one write(2), and syncs
 * the file when LAB_JOURNAL_SYNC_S has passed since the last sync. Cases that did not finish (o.not_run) are not
 * written. Returns LAB_OK, or the first failure (LAB_ERR_IO or LAB_ERR_NOMEM naming the file), after which nothing
 * more is written; the failure is said on stderr once. j NULL: nothing (a replay without a set). */
lab_status lab_journal_case(lab_journal *j, const lab_case_record *rec, const lab_results_cmd *cmd);

/* 1 when a case could not be written (lab_journal_case failed), 0 otherwise or for NULL. */
int lab_journal_failed(const lab_journal *j);

/* The result set, written in the staging folder, was swapped into out_dir (lab_resultset_swap), the journal with it:
 * removes the journal there (the set holds every case it held). j NULL: nothing. */
void lab_journal_swapped(lab_journal *j, const char *out_dir);

/* Ends a journal. One whose set was not swapped in (an error stopped it, or the run never started: an --mpi rank that
 * could not) stays in its staging folder for `lab replay --resume` when it holds a case (said on stderr); without one
 * the staging folder goes. Frees j; NULL is fine. */
void lab_journal_close(lab_journal *j);

#endif
