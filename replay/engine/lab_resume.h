/* lab_resume: `lab replay --resume DIR`: what an earlier replay into DIR left, read back so that the rest of it runs
 * and DIR gets the whole set, equal case by case to a replay that was never stopped. */
#ifndef LAB_RESUME_H
#define LAB_RESUME_H

#include <stddef.h>
#include <stdio.h>

#include "lab_err.h"
#include "lab_replay.h"

/* Contract.
 * - What DIR may hold, and what is read: DIR's result set (a finished one, or one an interrupt wrote: summary.json says
 *   what its replay ran, results.jsonl its finished cases), and the journals of replays into DIR that something killed
 *   before their set was swapped in (DIR.new-XXXXXX/journal.jsonl, lab_journal.h). The newest of them (by the time it
 *   was last written) says which replay is resumed; every one that ran the same replay gives its finished cases (a
 *   case found twice: the later source's, the later line's), the others are left as they are and named on diag.
 * - The replay resumed is the one recorded, whatever the command line says beside --resume (lab_cli refuses the flags
 *   that would change it): its incidents, variant, seeds, backend, watchdog cap, sanitizer and set files.
 * - After the resumed replay's set is swapped into DIR (it holds every case read here), lab_resume_drop removes the
 *   journals' staging folders that were read; until then nothing read here is changed, so a resume that is itself
 *   killed loses nothing either. */

/* What an earlier replay into a folder left. */
typedef struct lab_resume lab_resume;

/* What a replay runs as its set and journal record it: {"incidents": [ids], "variant": name or null, "first_seed",
 * "seeds", "seeds_default", "backend", "timeout_s", "sanitize": tool or null, "tap", "plots"} (summary.json's "replay",
 * the journal's first line's). NULL when out of memory, or when the seeds are not consecutive (no request makes such
 * a replay: it cannot be resumed, and its set and journal say nothing of it). */
struct cJSON *lab_resume_describe(const lab_replay_opts *opts);

/* Reads what dir (an --out folder; it may be missing) and the staging folders beside it hold and picks the replay to
 * resume (the contract above), saying on diag what it found. *out (lab_resume_free). Errors, each naming the folder or
 * file: LAB_ERR_ARG when nothing there can be resumed (no result set of the lab, no journal beside it);
 * LAB_ERR_FORMAT when the newest source does not say what its replay ran (a set of a lab before --resume) or cannot be
 * parsed; LAB_ERR_IO when a file cannot be read; LAB_ERR_NOMEM. */
lab_status lab_resume_open(const char *dir, FILE *diag, lab_resume **out);

/* The replay resumed, as lab_resume_describe wrote it (owned by r). */
const struct cJSON *lab_resume_replay(const lab_resume *r);

/* 1 when the newest source is dir's own result set and a finished one (not interrupted): there is nothing to run; then
 * *exit_status is the exit status its summary.json records. */
int lab_resume_finished_set(const lab_resume *r, int *exit_status);

/* Finds every finished case the sources hold among the cases opts plans (opts: the replay resumed, as the request
 * lab_resume_replay describes makes it), so that lab_resume_fill can give each back. A line without its newline at the
 * end of a journal (a write a kill cut short) is left out. Errors: LAB_ERR_FORMAT naming file:line for a line that is
 * not a case record, or a case the replay does not plan; LAB_ERR_IO, LAB_ERR_NOMEM. */
lab_status lab_resume_index(lab_resume *r, const lab_replay_opts *opts);

/* Finished cases found by lab_resume_index. */
size_t lab_resume_count(const lab_resume *r);

/* rec (its incident, variant and seed set, outcome zeroed) gets its finished outcome from the sources: 1; 0 when it did
 * not finish there (rec untouched); -1 with the error set when its line cannot be read back (LAB_ERR_IO,
 * LAB_ERR_FORMAT naming the file). opts as given to lab_resume_index. r NULL: 0. */
int lab_resume_fill(const lab_resume *r, const lab_replay_opts *opts, lab_case_record *rec);

/* After the resumed set was swapped into the folder: removes the staging folders whose journals were read (their
 * cases are in the set). */
void lab_resume_drop(lab_resume *r);

/* Releases r (nothing on disk changes); NULL is fine. */
void lab_resume_free(lab_resume *r);

#endif
