/* lab_replay_run: the replay's entry point (lab_replay.h): a replay of more cases than lab_replay_window_at() goes to
 * lab_window (windowed), any other runs in memory through the core (lab_replay.c). Its own file so that the core does
 * not reach up to the window, which is built on it. */
#include <stdlib.h>
#include <string.h>

#include "lab_args.h"
#include "lab_fs.h"
#include "lab_isolate.h"
#include "lab_replay_int.h"
#include "lab_stall.h"
#include "lab_window.h"

lab_status lab_replay_run(const lab_replay_opts *opts, FILE *report, lab_verdict *verdict, lab_case_record **recs_out,
                          size_t *n_recs)
{
    memset(verdict, 0, sizeof *verdict);
    verdict->exit_status = LAB_EXIT_FAILED;
    *recs_out = NULL;
    *n_recs = 0;
    size_t planned = lab_replay_count(opts);
    if (planned > lab_replay_window_at()) return lab_window_run(opts, report, verdict, planned);
    lab_case_record *recs;
    size_t n;
    lab_status st = lab_replay_cases(opts, &recs, &n);
    if (st != LAB_OK) return st;
    if (opts->out_dir && (st = lab_fs_mkdirs(opts->out_dir)) != LAB_OK) {
        free(recs);
        return st;
    }
    double t0 = lab_replay_now();
    lab_stall_point(LAB_STALL_PLANNING);
    if (lab_isolate_interrupted()) /* interrupted while planning: no case starts */
        for (size_t j = 0; j < n; ++j) {
            recs[j].o.outcome = LAB_OUT_ERROR;
            recs[j].o.not_run = 1;
            snprintf(recs[j].o.error, sizeof recs[j].o.error, "interrupted");
        }
    else
        st = lab_replay_execute_records(opts, recs, n, NULL, NULL);
    if (st != LAB_OK) fprintf(report, "replay: %s (the cases not started are ERROR)\n", lab_err_msg());
    lab_verdict_run run = {.harness_failed = st != LAB_OK};
    lab_status st2 = lab_replay_report(opts, report, recs, n, lab_replay_now() - t0, &run, verdict);
    *recs_out = recs;
    *n_recs = n;
    return st2 != LAB_OK ? st2 : st;
}
