/* lab_semicrf_train: SGD on the semi-CRF's transitions and durations through the emulated backward, against a seeded gold segmentation. */
#include "lab_semicrf.h"

#include <stdlib.h>
#include <string.h>

#include "lab_rng.h"

/* ---------------------------------------------------------------------------------------------- */
/* Training                                                                                        */

void lab_semicrf_gold_free(lab_semicrf_gold *g)
{
    free(g->cnt_cum);
    free(g->cnt_trans);
    free(g->cnt_dur);
    free(g->cnt_ps);
    free(g->cnt_pe);
    memset(g, 0, sizeof *g);
}

lab_status lab_semicrf_gold_make(const lab_semicrf_problem *p, uint64_t seed, lab_semicrf_gold *g)
{
    memset(g, 0, sizeof *g);
    lab_status st = lab_semicrf_problem_check(p);
    if (st != LAB_OK) return st;
    int B = p->B, T = p->T, K = p->K, C = p->C;
    g->cnt_cum = calloc((size_t)B * (size_t)(T + 1) * (size_t)C, sizeof(double));
    g->cnt_trans = calloc((size_t)C * (size_t)C, sizeof(double));
    g->cnt_dur = calloc((size_t)K * (size_t)C, sizeof(double));
    g->cnt_ps = calloc((size_t)B * (size_t)T * (size_t)C, sizeof(double));
    g->cnt_pe = calloc((size_t)B * (size_t)T * (size_t)C, sizeof(double));
    if (!g->cnt_cum || !g->cnt_trans || !g->cnt_dur || !g->cnt_ps || !g->cnt_pe) {
        lab_semicrf_gold_free(g);
        return lab_err_set(LAB_ERR_NOMEM, "semicrf: out of memory for the gold segmentation");
    }
    uint64_t w = 0;
    int dmax = K < 8 ? K : 8;
    for (int b = 0; b < B; ++b) {
        int s = 0, prev = -1;
        while (s < p->len[b]) {
            int k = 1 + (int)(lab_rng_u32(seed, LAB_SEMICRF_STREAM_SCHED ^ 0x9000u, w++) % (uint32_t)dmax);
            if (s + k > p->len[b]) k = p->len[b] - s;
            int c = (int)(lab_rng_u32(seed, LAB_SEMICRF_STREAM_SCHED ^ 0x9000u, w++) % (uint32_t)C);
            g->cnt_cum[((size_t)b * (size_t)(T + 1) + (size_t)(s + k)) * (size_t)C + (size_t)c] += 1.0;
            g->cnt_cum[((size_t)b * (size_t)(T + 1) + (size_t)s) * (size_t)C + (size_t)c] -= 1.0;
            g->cnt_dur[(size_t)(k - 1) * (size_t)C + (size_t)c] += 1.0;
            g->cnt_ps[((size_t)b * (size_t)T + (size_t)s) * (size_t)C + (size_t)c] += 1.0;
            g->cnt_pe[((size_t)b * (size_t)T + (size_t)(s + k - 1)) * (size_t)C + (size_t)c] += 1.0;
            if (prev >= 0) g->cnt_trans[(size_t)prev * (size_t)C + (size_t)c] += 1.0;
            prev = c;
            s += k;
        }
    }
    return LAB_OK;
}

lab_status lab_semicrf_sgd_step(lab_semicrf_problem *p, const lab_semicrf_gold *g, const lab_semicrf_config *cfg,
                                float lr, double *nll)
{
    lab_semicrf_out o;
    lab_status st = lab_semicrf_emulate(p, cfg, &o);
    if (st != LAB_OK) return st;
    int C = p->C, K = p->K;
    double positions = 0.0, zsum = 0.0;
    for (int b = 0; b < p->B; ++b) positions += p->len[b], zsum += (double)o.logZ[b];
    /* gold score in double from the current parameters' counts (trans and dur only move) */
    double gold = 0.0;
    for (size_t i = 0; i < (size_t)C * (size_t)C; ++i) gold += g->cnt_trans[i] * (double)p->trans[i];
    for (size_t i = 0; i < (size_t)K * (size_t)C; ++i) gold += g->cnt_dur[i] * (double)p->dur[i];
    for (size_t i = 0; i < (size_t)p->B * (size_t)(p->T + 1) * (size_t)C; ++i) gold += g->cnt_cum[i] * (double)p->cum[i];
    if (p->use_proj)
        for (size_t i = 0; i < (size_t)p->B * (size_t)p->T * (size_t)C; ++i)
            gold += g->cnt_ps[i] * (double)p->proj_start[i] + g->cnt_pe[i] * (double)p->proj_end[i];
    if (nll) *nll = (zsum - gold) / positions;
    float scale = lr / (float)positions;
    for (size_t i = 0; i < (size_t)C * (size_t)C; ++i)
        p->trans[i] = p->trans[i] - scale * (o.g_trans[i] - (float)g->cnt_trans[i]);
    for (size_t i = 0; i < (size_t)K * (size_t)C; ++i)
        p->dur[i] = p->dur[i] - scale * (o.g_dur[i] - (float)g->cnt_dur[i]);
    lab_semicrf_out_free(&o);
    return LAB_OK;
}
