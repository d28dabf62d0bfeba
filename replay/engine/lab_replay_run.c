/* lab_replay_run: the replay's entry points (lab_replay.h): a request as the command layer fills it
 * (lab_replay_request_run: checked, its backend and MPS set up, then run), and a replay of more cases than lab_replay_window_at() goes to
 * lab_window (windowed), any other runs in memory through the core (lab_replay.c). Its own file so that the core does
 * not reach up to the window, which is built on it. */
#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "lab_arch.h"
#include "lab_command.h"
#include "lab_clock.h"
#include "lab_device.h"
#include "lab_fs.h"
#include "lab_isolate.h"
#include "lab_journal.h"
#include "lab_mps_replay.h"
#include "lab_phase.h"
#include "lab_replay_int.h"
#include "lab_resultset.h"
#include "lab_resume.h"
#include "lab_sanitize.h"
#include "lab_stall.h"
#include "lab_window.h"

/* lab_replay_run_rest's run over the cases of a replay held in memory. */
static lab_status lab_replay_run_records(void *opts, lab_case_record *recs, size_t n)
{
    return lab_replay_execute_records(opts, recs, n, NULL, NULL);
}

/* A replay of at most lab_replay_window_at() cases, its records held in memory: the cases that did not finish before
 * (opts->how.carry) run, then the report and the set. */
static lab_status lab_replay_run_held(const lab_replay_opts *opts, FILE *report, lab_verdict *verdict,
                                      lab_case_record **recs_out, size_t *n_recs)
{
    lab_case_record *recs;
    size_t n;
    lab_status st = lab_replay_cases(opts, &recs, &n);
    if (st != LAB_OK) return st;
    double t0 = lab_clock_now();
    lab_phase("replay clock starts");
    lab_stall_point(LAB_STALL_PLANNING);
    /* interrupted while planning: no case starts (the ones that finished before, --resume's, are kept all the same) */
    st = lab_replay_run_rest(opts, recs, n, lab_isolate_interrupted() ? lab_replay_not_started : lab_replay_run_records,
                             (void *)opts, NULL);
    if (st != LAB_OK) fprintf(report, "replay: %s (the cases not started are ERROR)\n", lab_err_msg());
    lab_phase("cases done");
    lab_verdict_run run = {.harness_failed = st != LAB_OK};
    lab_status st2 = lab_replay_report(opts, report, recs, n, lab_clock_now() - t0, &run, verdict);
    *recs_out = recs;
    *n_recs = n;
    return st2 != LAB_OK ? st2 : st;
}

lab_status lab_replay_run(const lab_replay_opts *opts_in, FILE *report, lab_verdict *verdict,
                          lab_case_record **recs_out, size_t *n_recs)
{
    memset(verdict, 0, sizeof *verdict);
    verdict->exit_status = LAB_EXIT_FAILED;
    *recs_out = NULL;
    *n_recs = 0;
    /* every finished case goes to the journal as it finishes, in the staging folder the set is then written in */
    lab_replay_opts opts;
    lab_journal *owned;
    lab_status st = lab_replay_journal_begin(opts_in, &opts, &owned);
    if (st != LAB_OK) return st;
    size_t planned = lab_replay_count(&opts);
    if (planned > lab_replay_window_at()) st = lab_window_run(&opts, report, verdict, planned);
    else st = lab_replay_run_held(&opts, report, verdict, recs_out, n_recs);
    lab_journal_close(owned);
    return st;
}

/* ------------------------------------------------------------------------------------------------ */
/* The entry of a request (lab_request.h): `lab replay` and `lab report` both come here */

/* The incidents a request selects into sel (*n): every incident, or those its ids name (a unique prefix each), and
 * the variant checked against them. LAB_ERR_NOTFOUND when an id or the variant is unknown, said on diag with the
 * known names. */
static lab_status lab_replay_select(const lab_request *req, FILE *diag, const lab_incident **sel, size_t *n)
{
    size_t n_all;
    const lab_incident *const *all = lab_incident_all(&n_all);
    *n = 0;
    if (req->n_ids == 0)
        for (size_t i = 0; i < n_all && *n < LAB_REQUEST_IDS_MAX; ++i) sel[(*n)++] = all[i];
    for (size_t i = 0; i < req->n_ids; ++i) {
        const lab_incident *inc = lab_incident_find(req->ids[i]);
        if (!inc) {
            fprintf(diag, "lab: unknown incident '%s'\nknown incidents:", req->ids[i]);
            for (size_t k = 0; k < n_all; ++k) fprintf(diag, " %s", all[k]->id);
            fprintf(diag, "\n");
            return lab_err_set(LAB_ERR_NOTFOUND, "unknown incident '%s'", req->ids[i]);
        }
        sel[(*n)++] = inc;
    }
    if (!req->variant) return LAB_OK;
    int found = 0;
    for (size_t i = 0; i < *n; ++i) found |= lab_incident_variant(sel[i], req->variant) != NULL;
    if (found) return LAB_OK;
    fprintf(diag, "lab: unknown variant '%s'; known:", req->variant);
    for (size_t i = 0; i < *n; ++i)
        for (int v = 0; v < sel[i]->n_variants; ++v) fprintf(diag, " %s/%s", sel[i]->id, sel[i]->variants[v].name);
    fprintf(diag, "\n");
    return lab_err_set(LAB_ERR_NOTFOUND, "unknown variant '%s'", req->variant);
}

/* The backend a request runs on (*backend) and whether a CUDA device is usable (*cuda_ok), from the machine probe;
 * auto falls back to the CPU and says so. LAB_ERR_DEVICE, said on diag, for cuda without a usable device unless
 * gpu_optional (every CUDA case then SKIPs), and, under cuda and auto alike, for a usable GPU that this build's kernels
 * do not load on (lab_arch_check: one message naming the GPU, its compute capability, the architectures carried and
 * the rebuild command). Auto does not fall back to the CPU then: a GPU is there and the build cannot use it, which is
 * a build to redo, not a machine without a GPU. Where the GPU runs PTX by JIT, the note says so and the JIT cache is
 * warmed before any worker starts. */
static lab_status lab_replay_backend(const lab_request *req, FILE *diag, lab_backend *backend, int *cuda_ok)
{
    *backend = LAB_BACKEND_CPU;
    *cuda_ok = 0;
    int is_auto = !strcmp(req->backend, "auto");
    if (!is_auto && strcmp(req->backend, "cuda")) return LAB_OK;
    char why[240];
    lab_arch_cache_setup(); /* before the probe: its child and the workers share one JIT cache */
    *cuda_ok = lab_device_usable(why, sizeof why) == LAB_OK;
    if (*cuda_ok) {
        static char msg[1200];
        if (lab_arch_check(msg, sizeof msg) != LAB_OK) {
            fprintf(diag, "%s\n", msg);
            return LAB_ERR_DEVICE;
        }
        char note[600];
        lab_arch_note(note, sizeof note);
        if (note[0] && !req->quiet) fprintf(diag, "backend %s: %s\n", is_auto ? "auto" : "cuda", note);
    }
    if (is_auto) {
        *backend = *cuda_ok ? LAB_BACKEND_CUDA : LAB_BACKEND_CPU;
        if (*cuda_ok) fprintf(diag, "backend auto: cuda\n");
        else fprintf(diag, "backend auto: cpu (%s)\n", why);
        return LAB_OK;
    }
    *backend = LAB_BACKEND_CUDA;
    if (*cuda_ok) return LAB_OK;
    if (!req->gpu_optional) {
        fprintf(diag,
                "lab replay: --backend cuda: no usable CUDA device: %s\n(--backend auto falls back to the "
                "CPU; --gpu-optional runs every CUDA case as SKIP instead)\n",
                why);
        return lab_err_set(LAB_ERR_DEVICE, "--backend cuda: no usable CUDA device: %s", why);
    }
    fprintf(diag, "backend cuda: no usable device (%s): cases SKIP (--gpu-optional)\n", why);
    return LAB_OK;
}

static lab_status lab_replay_request_go(const lab_request *req, const lab_replay_entry *how, lab_replay_result *res,
                                        lab_resume *carry);

/* Indexes what the resumed replay's folder holds (lab_resume_index) and makes it o's carry, saying on diag how much is
 * kept. Errors: lab_resume_index's, said on diag (a format error as LAB_ERR_ARG: the folder is the user's input). */
static lab_status lab_replay_carry(lab_replay_opts *o, lab_resume *carry, FILE *diag)
{
    lab_status st = lab_resume_index(carry, o);
    if (st != LAB_OK) {
        fprintf(diag, "lab replay --resume: %s\n", lab_err_msg());
        return st == LAB_ERR_FORMAT ? lab_err_set(LAB_ERR_ARG, "%s", lab_err_msg()) : st;
    }
    size_t planned = lab_replay_count(o), kept = lab_resume_count(carry);
    fprintf(diag, "lab replay --resume %s: %zu of %zu cases finished before and are kept; running the other %zu\n",
            o->how.out_dir, kept, planned, planned - kept);
    o->how.carry = carry;
    return LAB_OK;
}

/* The request a --resume completes (*rq): req's way of running (-j, --quiet, --batch-seeds, MPS, the lab's path) with
 * what to run as replay (lab_resume_describe) records it, into dir, every number in the range its flag takes.
 * LAB_ERR_FORMAT naming dir when the record is not one the lab writes. Strings point into replay. */
static lab_status lab_replay_resume_request(const lab_request *req, const cJSON *replay, const char *dir,
                                            lab_request *rq)
{
    *rq = *req;
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(replay, "incidents"), *id;
    const cJSON *variant = cJSON_GetObjectItemCaseSensitive(replay, "variant");
    const cJSON *first = cJSON_GetObjectItemCaseSensitive(replay, "first_seed");
    const cJSON *seeds = cJSON_GetObjectItemCaseSensitive(replay, "seeds");
    const cJSON *dflt = cJSON_GetObjectItemCaseSensitive(replay, "seeds_default");
    const cJSON *backend = cJSON_GetObjectItemCaseSensitive(replay, "backend");
    const cJSON *timeout = cJSON_GetObjectItemCaseSensitive(replay, "timeout_s");
    const cJSON *sanitize = cJSON_GetObjectItemCaseSensitive(replay, "sanitize");
    int good =
        cJSON_IsArray(ids) && cJSON_GetArraySize(ids) > 0 && cJSON_GetArraySize(ids) <= LAB_REQUEST_IDS_MAX &&
        (cJSON_IsString(variant) || cJSON_IsNull(variant)) && cJSON_IsNumber(first) && first->valuedouble >= 1 &&
        cJSON_IsNumber(seeds) && seeds->valuedouble >= 1 && seeds->valuedouble <= (double)LAB_REQUEST_SEEDS_MAX &&
        first->valuedouble + seeds->valuedouble - 1 <= 9007199254740992.0 && cJSON_IsBool(dflt) &&
        cJSON_IsString(backend) && (!strcmp(backend->valuestring, "cpu") || !strcmp(backend->valuestring, "cuda")) &&
        cJSON_IsNumber(timeout) && timeout->valuedouble >= 0 && timeout->valuedouble <= LAB_REQUEST_TIMEOUT_MAX &&
        (cJSON_IsString(sanitize) || cJSON_IsNull(sanitize));
    rq->n_ids = 0;
    const cJSON *list = good ? ids : NULL;
    cJSON_ArrayForEach(id, list) {
        if (!cJSON_IsString(id)) good = 0;
        else rq->ids[rq->n_ids++] = id->valuestring;
    }
    if (!good)
        return lab_err_set(LAB_ERR_FORMAT, "--resume %s: its record of what the replay ran is not one the lab writes",
                           dir);
    rq->variant = cJSON_IsString(variant) ? variant->valuestring : NULL;
    rq->have_seed = 0;
    rq->first_seed = (uint64_t)first->valuedouble;
    rq->have_first = 1;
    rq->n_seeds = (uint64_t)seeds->valuedouble;
    rq->have_seeds = !cJSON_IsTrue(dflt);
    rq->backend = backend->valuestring;
    rq->timeout_s = (uint64_t)timeout->valuedouble;
    rq->sanitize = cJSON_IsString(sanitize) ? sanitize->valuestring : NULL;
    rq->tap = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(replay, "tap"));
    rq->plots = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(replay, "plots"));
    rq->out = dir;
    rq->mpi = 0;
    return LAB_OK;
}

lab_status lab_replay_request_run(const lab_request *req_in, const lab_replay_entry *how, lab_replay_result *res)
{
    memset(res, 0, sizeof *res);
    res->verdict.exit_status = LAB_EXIT_FAILED;
    /* --resume: what to run comes from the folder, and the cases that finished there are kept */
    lab_resume *carry = NULL;
    lab_request resumed;
    const lab_request *req = req_in;
    if (req_in->resume) {
        lab_status st = lab_resume_open(req_in->resume, how->diag, &carry);
        if (st == LAB_OK) st = lab_replay_resume_request(req_in, lab_resume_replay(carry), req_in->resume, &resumed);
        int ex;
        if (st == LAB_OK && lab_resume_finished_set(carry, &ex)) {
            fprintf(how->report, "lab replay --resume %s: its replay finished: nothing to run (exit status %d, as its "
                                 "summary.json says)\n", req_in->resume, ex);
            res->verdict.exit_status = ex;
            res->verdict.ok = ex == LAB_EXIT_OK;
            lab_resume_free(carry);
            return LAB_OK;
        }
        if (st != LAB_OK) {
            lab_resume_free(carry);
            return st == LAB_ERR_FORMAT ? lab_err_set(LAB_ERR_ARG, "%s", lab_err_msg()) : st;
        }
        req = &resumed;
    }
    lab_status st = lab_replay_request_go(req, how, res, carry);
    if (st == LAB_OK && req->out) lab_resume_drop(carry); /* its cases are in the set now in the folder */
    lab_resume_free(carry);
    return st;
}

/* lab_replay_request_run once the request is known: carry (NULL: none) gives the cases that finished before. */
static lab_status lab_replay_request_go(const lab_request *req, const lab_replay_entry *how, lab_replay_result *res,
                                        lab_resume *carry)
{
    if (req->sanitize && lab_sanitize_tool_check(req->sanitize) != LAB_OK)
        return lab_err_set(LAB_ERR_ARG, "--sanitize: %s", lab_err_msg());
    if (req->mpi && !how->scale_out) return lab_err_set(LAB_ERR_ARG, "--mpi: this program cannot run under MPI");
    if (req->out && lab_fs_out_check("--out", req->out, lab_replay_set_names) != LAB_OK) return LAB_ERR_ARG;
    lab_status st;
    lab_backend backend;
    int cuda_ok;
    st = lab_replay_backend(req, how->diag, &backend, &cuda_ok);
    lab_phase("backend decided (device probe)");
    if (st != LAB_OK) {
        res->said = 1;
        return st;
    }
    const lab_incident *sel[LAB_REQUEST_IDS_MAX];
    size_t n_sel;
    if ((st = lab_replay_select(req, how->diag, sel, &n_sel)) != LAB_OK) {
        res->said = 1;
        return st;
    }
    size_t ns, bytes;
    if ((st = lab_request_seed_bytes(req, &ns, &bytes)) != LAB_OK) return st;
    uint64_t *seeds = malloc(bytes ? bytes : 1);
    if (!seeds) return lab_err_set(LAB_ERR_NOMEM, "out of memory for %zu seeds", ns);
    for (size_t s = 0; s < ns; ++s) seeds[s] = req->have_seed ? req->seed : req->first_seed + s;

    lab_replay_opts o = {
        .what = {.incidents = sel, .n_incidents = n_sel, .variant = req->variant, .seeds = seeds, .n_seeds = ns,
                 .seeds_default = !req->have_seed && !req->have_seeds, .backend = backend,
                 .timeout_s = (double)req->timeout_s, .sanitize = req->sanitize},
        .how = {.jobs = (int)req->jobs, .out_dir = req->out, .tap = req->tap, .plots = req->plots,
                .progress = !req->quiet, .lab_bin = req->lab_bin, .root = req->root,
                .batch_seeds = (unsigned)req->batch_seeds, .summary_out = how->keep_set ? &res->summary : NULL,
                .set_out = how->keep_set ? &res->set : NULL, .plots_out = how->keep_set ? &res->plots : NULL}};
    /* The CUDA workers share the GPU through a private MPS daemon (lab_mps_replay.h), unless asked not to, under
     * compute-sanitizer (no MPS clients) or for one seed: started before the workers (under --mpi by each rank, for
     * its share of its host's GPUs), stopped after the replay, interrupted or not. */
    static lab_mps mps; /* large (one folder a GPU): not on the stack */
    memset(&mps, 0, sizeof mps);
    o.how.want_mps = backend == LAB_BACKEND_CUDA && cuda_ok && !req->have_seed && !req->no_mps && !req->sanitize;
    o.how.mps = &mps;
    if (o.how.want_mps && !req->mpi) lab_mps_replay_start(&mps, req->quiet ? NULL : how->diag, "");
    o.how.device_ok = backend == LAB_BACKEND_CUDA && cuda_ok;
    if (carry && (st = lab_replay_carry(&o, carry, how->diag)) != LAB_OK) {
        free(seeds);
        res->said = 1;
        return st;
    }
    /* SIGINT/SIGTERM: stop, keep the finished cases (lab_isolate.h); under --mpi mpirun passes the signal to every
     * rank (lab_mpi.h, LAB_MPI_INTERRUPT_WAIT_S). */
    if (lab_isolate_catch_signals() != LAB_OK) fprintf(how->diag, "lab replay: %s\n", lab_err_msg());
    st = (req->mpi ? how->scale_out : lab_replay_run)(&o, how->report, &res->verdict, &res->recs, &res->n_recs);
    lab_phase("replay done");
    lab_mps_stop(&mps);
    lab_phase("MPS daemons stopped");
    res->backend = backend;
    free(seeds);
    return st;
}

void lab_replay_result_free(lab_replay_result *res)
{
    free(res->recs);
    lab_resread_free(&res->set);
    lab_plot_list_free(&res->plots);
    cJSON_Delete(res->summary);
    memset(res, 0, sizeof *res);
}
