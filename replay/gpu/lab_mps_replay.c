/* lab_mps_replay: the MPS daemons of one CUDA replay (lab_mps_replay.h). */
#include "lab_mps_replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_device.h"
#include "lab_isolate.h"
#include "lab_phase.h"

#ifdef LAB_HAVE_CUDA
#include "lab_cuda.h"

static lab_status lab_mps_replay_probe_job(void *ctx, size_t job, lab_case_result *r)
{
    char why[200];
    lab_device_one_queue(); /* as the workers' contexts will be */
    if (ctx) lab_mps_client((const lab_mps *)ctx, (int)job); /* GPU job's daemon */
    lab_phase("MPS probe: making a context");
    if (lab_cuda_ready(why, sizeof why) == LAB_OK) lab_result_verdict(r, 1, "CUDA device ready");
    else lab_result_skip(r, "%s", why);
    lab_phase("MPS probe: done");
    return LAB_OK;
}
#endif

/* A context can be made through the one daemon of *m (probed in a child process: the machine's own CUDA check,
 * lab_device_usable, was made before the daemon started). LAB_OK, or LAB_ERR_DEVICE with why. */
static lab_status lab_mps_replay_one(char *why, size_t len)
{
#ifdef LAB_HAVE_CUDA
    lab_job_outcome o;
    if (lab_isolate_run(1, lab_mps_replay_probe_job, NULL, 1, 60, NULL, &o) == LAB_OK && o.outcome == LAB_OUT_PASS)
        return LAB_OK;
    snprintf(why, len, "%s", o.r.detail[0] ? o.r.detail : o.error);
    return lab_err_set(LAB_ERR_DEVICE, "%s", why);
#else
    snprintf(why, len, "this build has no CUDA");
    return lab_err_set(LAB_ERR_DEVICE, "%s", why);
#endif
}

/* Every GPU's daemon of *m serves a context (each probed in a child process): LAB_OK, or LAB_ERR_DEVICE with the
 * first failure in why. */
static lab_status lab_mps_replay_probe(lab_mps *m, char *why, size_t len)
{
#ifdef LAB_HAVE_CUDA
    lab_job_outcome o[LAB_MPS_MAX_GPUS];
    if (lab_isolate_run((size_t)m->ngpu, lab_mps_replay_probe_job, m, m->ngpu, 60, NULL, o) != LAB_OK)
        return lab_err_set(LAB_ERR_DEVICE, "%s", lab_err_msg());
    for (int k = 0; k < m->ngpu; ++k)
        if (o[k].outcome != LAB_OUT_PASS) {
            snprintf(why, len, "GPU %s: %s", m->gpu_uuid[k], o[k].r.detail[0] ? o[k].r.detail : o[k].error);
            return lab_err_set(LAB_ERR_DEVICE, "%s", why);
        }
    return LAB_OK;
#else
    snprintf(why, len, "this build has no CUDA");
    return lab_err_set(LAB_ERR_UNSUPPORTED, "%s", why);
#endif
}

/* The start itself: *why says what was done or why not. */
static lab_status lab_mps_replay_begin(lab_mps *m, char *why, size_t len)
{
    lab_machine *host = malloc(sizeof *host);
    lab_status st;
    if (!host) {
        st = lab_mps_start(m, why, len);
    } else {
        lab_device_machine(host);
        int known = host->ngpu > 0;
        const char *uuids[LAB_MPS_MAX_GPUS];
        for (int k = 0; k < host->ngpu && k < LAB_MPS_MAX_GPUS; ++k) {
            uuids[k] = host->uuid[k];
            known &= host->uuid[k][0] != 0;
        }
        st = known && host->ngpu <= LAB_MPS_MAX_GPUS ? lab_mps_start_per_gpu(m, uuids, host->ngpu, why, len)
                                                     : lab_mps_start(m, why, len);
        free(host);
    }
    if (st != LAB_OK) return st;
    lab_phase("MPS daemons started");
    char pwhy[240];
    int per_gpu = m->ngpu > 0;
    if ((per_gpu ? lab_mps_replay_probe(m, pwhy, sizeof pwhy) : lab_mps_replay_one(pwhy, sizeof pwhy)) != LAB_OK) {
        lab_mps_stop(m);
        snprintf(why, len, "no context through %s (%s): the workers' contexts take turns on the GPU%s",
                 per_gpu ? "a GPU's MPS daemon" : "MPS", pwhy, per_gpu ? "s" : "");
        return lab_err_set(LAB_ERR_DEVICE, "%s", why);
    }
    lab_phase("MPS daemons probed");
    lab_mps_confirm(m);
    return LAB_OK;
}

lab_status lab_mps_replay_start(lab_mps *m, FILE *say, const char *prefix)
{
    char why[320];
    lab_status st = lab_mps_replay_begin(m, why, sizeof why);
    if (say && (st != LAB_ERR_UNSUPPORTED || getenv("CUDA_MPS_PIPE_DIRECTORY")))
        fprintf(say, "%scuda: %s\n", prefix ? prefix : "", why);
    return st;
}
