/* lab_mpi_serve: rank 0 of an `--mpi` replay: deals seed groups to the ranks, serves their messages, judges the silent
 * and the dead, gathers and settles every case, and gives the account of the ranks (lab_mpi_serve.h). */
#include "lab_mpi_serve.h"

#ifdef LAB_HAVE_MPI

#include <cJSON.h>
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab_isolate.h"
#include "lab_journal.h"

static const char *lab_mpi_status_name(lab_mpi_rank_status s)
{
    static const char *names[] = {"running", "done", "crashed", "hung", "bad"};
    return names[s];
}

/* Appends chunk c of deal x->deals, dealt to rank r, to the deal log (its seeds read from the case list now). */
static void lab_mpi_log_chunk(lab_mpi_ctx *x, int r, const lab_deal_chunk *c)
{
    if (x->log_lost) return;
    if (x->n_log == x->cap_log) {
        size_t cap = x->cap_log ? 2 * x->cap_log : 64;
        lab_mpi_deal_log *grown = realloc(x->log, cap * sizeof *grown);
        if (!grown) {
            x->log_lost = 1;
            return;
        }
        x->log = grown, x->cap_log = cap;
    }
    const lab_replay_groups *g = &x->groups;
    const lab_case_record *a = &x->all[g->order[g->start[c->first]]], *b = &x->all[g->order[g->start[c->end] - 1]];
    x->log[x->n_log++] = (lab_mpi_deal_log){r, x->deals, x->windowed ? x->window : 0, lab_clock_now() - x->t0,
                                            a->incident->id, a->seed, b->seed, g->start[c->end] - g->start[c->first],
                                            c->cost};
}

void lab_mpi_deal_to(lab_mpi_ctx *x, int r, const lab_deal_chunk *c, size_t k)
{
    const lab_replay_groups *g = &x->groups;
    x->deals++;
    for (size_t j = 0; j < k; ++j) {
        for (size_t p = g->start[c[j].first]; p < g->start[c[j].end]; ++p) x->dealt_to[g->order[p]] = r;
        x->ranks[r].n_dealt += g->start[c[j].end] - g->start[c[j].first];
        lab_mpi_log_chunk(x, r, &c[j]);
    }
    x->ranks[r].chunks += k;
    x->chunks += k;
}

/* Rank 0: rank r is out of the dealing (the window's, if one is being dealt; a windowed replay's next windows leave
 * out every rank no longer running). */
static void lab_mpi_retire(lab_mpi_ctx *x, int r)
{
    if (x->dealer) lab_deal_retire(x->dealer, r);
}

void lab_mpi_take(lab_mpi_ctx *x, int src, size_t i, const lab_job_outcome *o, const char *first_run)
{
    if (!x->dealt_to || i >= x->n_all || x->dealt_to[i] != src) return;
    if (!x->got[i]) x->ranks[src].n_got++;
    x->got[i] = 1;
    x->all[i].o = *o;
    snprintf(x->all[i].first_run, sizeof x->all[i].first_run, "%s", first_run);
    if (src != 0) { /* into the journal as it comes (rank 0's own cases went there from its engine) */
        lab_results_cmd spell = lab_replay_cmd(x->opts);
        lab_journal_case(x->opts->how.journal, &x->all[i], &spell);
    }
}

/* Rank 0: answers rank src's request for work. */
static void lab_mpi_answer(lab_mpi_ctx *x, int src, const lab_mpi_ask_msg *q)
{
    lab_mpi_deal_msg d;
    memset(&d, 0, sizeof d);
    d.seq = q->seq;
    if (x->windowed && !x->over && q->window > x->window) { /* a window rank 0 has not reached: kept open */
        x->pending[src] = *q;
        x->has_pending[src] = 1;
        return;
    }
    lab_deal_chunk c[LAB_MPI_MAX_PARTS];
    size_t k;
    if (x->over) d.more = LAB_MPI_DEAL_OVER;
    else if ((!x->windowed || (q->window == x->window && x->in_window)) && x->ranks[src].status == LAB_RANK_RUNNING &&
             q->nparts == x->groups.nparts && (k = lab_deal_next(x->dealer, src, q->accept, c, LAB_MPI_MAX_PARTS)) > 0) {
        lab_mpi_deal_to(x, src, c, k);
        d.more = LAB_MPI_DEAL_SOME;
        d.n = (uint32_t)k;
        for (size_t j = 0; j < k; ++j) d.c[j].first = c[j].first, d.c[j].end = c[j].end;
    }
    MPI_Send(&d, (int)lab_mpi_deal_len(d.n), MPI_BYTE, src, LAB_MPI_TAG_DEAL, MPI_COMM_WORLD);
}

void lab_mpi_drain(lab_mpi_ctx *x)
{
    for (;;) {
        int flag = 0;
        MPI_Status stt;
        if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &stt) != MPI_SUCCESS || !flag) return;
        int src = stt.MPI_SOURCE, tag = stt.MPI_TAG, count = 0;
        MPI_Get_count(&stt, MPI_BYTE, &count);
        union {
            lab_mpi_hello h;
            lab_mpi_case_msg c;
            lab_mpi_done_msg d;
            lab_mpi_ask_msg q;
            lab_mpi_alive_msg a;
        } m;
        memset(&m, 0, sizeof m);
        size_t want = tag == LAB_MPI_TAG_HELLO ? sizeof m.h : tag == LAB_MPI_TAG_CASE ? sizeof m.c
                    : tag == LAB_MPI_TAG_ASK   ? sizeof m.q : tag == LAB_MPI_TAG_ALIVE ? sizeof m.a : sizeof m.d;
        if (count < 0 || (size_t)count > sizeof m) {
            /* Not ours or malformed: receive it into a scratch buffer to get it out of the way. */
            char *junk = malloc(count > 0 ? (size_t)count : 1);
            if (junk) MPI_Recv(junk, count, MPI_BYTE, src, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            free(junk);
            continue;
        }
        if (MPI_Recv(&m, count, MPI_BYTE, src, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS) return;
        if (src <= 0 || src >= x->size) continue;
        lab_mpi_peer *rk = &x->ranks[src];
        rk->last_heard = lab_clock_now();
        if ((size_t)count != want) {
            if (rk->status == LAB_RANK_RUNNING) {
                rk->status = LAB_RANK_BAD;
                lab_mpi_retire(x, src);
                snprintf(rk->why, sizeof rk->why, "sent a %d-byte message with tag %d (want %zu): not the same lab build",
                         count, tag, want);
            }
            continue;
        }
        if (tag == LAB_MPI_TAG_ASK) { /* answered whatever the rank's state: a rank judged already gets "none" */
            lab_mpi_answer(x, src, &m.q);
            continue;
        }
        if (tag == LAB_MPI_TAG_ALIVE) continue; /* heard: that is all */
        if (rk->status != LAB_RANK_RUNNING) continue; /* judged already (e.g. a late word from a hung rank) */
        if (tag == LAB_MPI_TAG_HELLO) {
            rk->hello = m.h;
            rk->have_hello = 1;
            if (x->dealer) lab_deal_weight(x->dealer, src, m.h.jobs);
            if (m.h.n_total != x->check_total || m.h.n_groups != x->check_groups) {
                rk->status = LAB_RANK_BAD;
                lab_mpi_retire(x, src);
                snprintf(rk->why, sizeof rk->why,
                         "built %llu cases in %llu %s, rank 0 built %zu in %zu: ranks must run the same lab "
                         "build with the same arguments%s",
                         (unsigned long long)m.h.n_total, (unsigned long long)m.h.n_groups,
                         x->windowed ? "-case windows" : "seed groups", x->check_total, x->check_groups,
                         x->windowed ? " and LAB_REPLAY_WINDOW" : "");
            }
        } else if (tag == LAB_MPI_TAG_CASE) {
            m.c.first_run[sizeof m.c.first_run - 1] = 0;
            if (!x->windowed || (m.c.window == x->window && x->in_window))
                lab_mpi_take(x, src, (size_t)m.c.index, &m.c.o, m.c.first_run);
        } else if (tag == LAB_MPI_TAG_DONE) {
            rk->wall_s = m.d.wall_s;
            rk->status = LAB_RANK_DONE;
            m.d.error[sizeof m.d.error - 1] = 0;
            if (m.d.status != LAB_OK) snprintf(rk->why, sizeof rk->why, "its harness failed: %s", m.d.error);
            else if (rk->n_got != rk->n_dealt && !m.d.interrupted)
                snprintf(rk->why, sizeof rk->why, "finished having reported %zu of %zu cases", rk->n_got, rk->n_dealt);
        }
    }
}

/* Is the process pid on this host gone (no /proc entry, or a zombie)? */
static int lab_mpi_pid_gone(long pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return errno == ENOENT;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* Rank 0: judges the ranks still running: one whose process is gone (same host) crashed, one silent for longer than
 * x->patience hung; either is retired from the dealing (what it was not dealt goes to the others). Returns how many
 * still run. */
static int lab_mpi_judge(lab_mpi_ctx *x)
{
    int running = 0;
    double now = lab_clock_now();
    for (int r = 1; r < x->size; ++r) {
        lab_mpi_peer *rk = &x->ranks[r];
        if (rk->status != LAB_RANK_RUNNING) continue;
        const char *host = rk->have_hello ? rk->hello.host : "?";
        long pid = rk->have_hello ? (long)rk->hello.pid : -1;
        if (rk->have_hello && !strcmp(rk->hello.host, x->host) && lab_mpi_pid_gone(pid)) {
            lab_mpi_drain(x); /* its last words, if any, are in by now */
            if (rk->status != LAB_RANK_RUNNING) continue;
            rk->status = LAB_RANK_CRASHED;
            snprintf(rk->why, sizeof rk->why, "rank %d (host %s, pid %ld) died after reporting %zu of %zu cases", r, host,
                     pid, rk->n_got, rk->n_dealt);
        } else if (now - rk->last_heard > x->patience) {
            rk->status = LAB_RANK_HUNG;
            snprintf(rk->why, sizeof rk->why,
                     "rank %d (host %s, pid %ld) silent for %.0f s (longest case watchdog %.0f s + %.0f s grace) after "
                     "reporting %zu of %zu cases: hung%s",
                     r, host, pid, now - rk->last_heard, x->patience - LAB_MPI_GRACE_S, LAB_MPI_GRACE_S, rk->n_got,
                     rk->n_dealt, rk->have_hello && !strcmp(host, x->host) ? "" : ", or died on another host");
        } else {
            running++;
            continue;
        }
        lab_mpi_retire(x, r);
    }
    x->judged_at = now;
    return running;
}

/* Rank 0: tells the ranks whose request waits for a window it has not reached to hold on (every LAB_MPI_ALIVE_S), so
 * that they wait for it however long it takes to end the window in progress. */
static void lab_mpi_hold(lab_mpi_ctx *x)
{
    if (!x->has_pending || lab_clock_now() - x->held_at < LAB_MPI_ALIVE_S) return;
    x->held_at = lab_clock_now();
    for (int r = 1; r < x->size; ++r)
        if (x->has_pending[r]) {
            lab_mpi_deal_msg d = {.seq = x->pending[r].seq, .more = LAB_MPI_DEAL_HOLD};
            MPI_Send(&d, (int)lab_mpi_deal_len(0), MPI_BYTE, r, LAB_MPI_TAG_DEAL, MPI_COMM_WORLD);
        }
}

void lab_mpi_answer_pending(lab_mpi_ctx *x)
{
    for (int r = 1; x->has_pending && r < x->size; ++r)
        if (x->has_pending[r] && (x->over || x->pending[r].window <= x->window)) {
            x->has_pending[r] = 0;
            lab_mpi_answer(x, r, &x->pending[r]);
        }
}

void lab_mpi_serve(void *vctx)
{
    lab_mpi_ctx *x = vctx;
    lab_mpi_drain(x);
    lab_mpi_hold(x);
    if (lab_clock_now() - x->judged_at >= 1.0) lab_mpi_judge(x);
}

/* The end of a turn of rank 0's gathering loops: sleeps ms milliseconds and returns 0, or returns 1 (gathering ends)
 * once LAB_MPI_INTERRUPT_WAIT_S has passed since the first turn that saw an interrupt (*until: 0 before it): mpirun
 * signalled every rank, so their word comes at once or not at all, and mpirun's kill follows. */
static int lab_mpi_turn_ends(double *until, long ms)
{
    if (lab_isolate_interrupted()) {
        if (*until == 0) *until = lab_clock_now() + LAB_MPI_INTERRUPT_WAIT_S;
        else if (lab_clock_now() > *until) return 1;
    }
    struct timespec ts = {0, ms * 1000 * 1000};
    nanosleep(&ts, NULL);
    return 0;
}

void lab_mpi_gather(lab_mpi_ctx *x)
{
    double until = 0;
    for (;;) {
        lab_mpi_drain(x);
        lab_mpi_answer_pending(x);
        if (!lab_mpi_judge(x)) return;
        if (lab_mpi_turn_ends(&until, 20)) return;
    }
}

void lab_mpi_gather_window(lab_mpi_ctx *x)
{
    double until = 0;
    for (;;) {
        lab_mpi_drain(x);
        lab_mpi_hold(x);
        int running = lab_mpi_judge(x), open = 0;
        for (size_t i = 0; i < x->n_all && !open; ++i) {
            int r = x->dealt_to[i];
            open = r > 0 && !x->got[i] && x->ranks[r].status == LAB_RANK_RUNNING;
        }
        if (!open && (running == 0 || lab_deal_left(x->dealer) == 0)) return;
        if (lab_mpi_turn_ends(&until, 2)) return;
    }
}

lab_status lab_mpi_dealer_make(lab_mpi_ctx *x)
{
    size_t n = x->n_all, ng = x->groups.ng;
    x->got = calloc(n ? n : 1, 1);
    x->dealt_to = malloc((n ? n : 1) * sizeof *x->dealt_to);
    lab_deal_group *dg = malloc((ng ? ng : 1) * sizeof *dg);
    lab_status st = x->got && x->dealt_to && dg ? LAB_OK : lab_err_set(LAB_ERR_NOMEM, "--mpi: out of memory");
    for (size_t k = 0; st == LAB_OK && k < ng; ++k) dg[k] = (lab_deal_group){x->groups.part[k], x->groups.cost[k]};
    if (st == LAB_OK) st = lab_deal_create(dg, ng, x->size, &x->dealer);
    free(dg);
    for (size_t p = 0; st == LAB_OK && p < x->groups.nparts; ++p)
        lab_deal_floor(x->dealer, p, lab_replay_run_seeds(x->opts, x->all, &x->groups, p));
    for (size_t i = 0; st == LAB_OK && i < n; ++i) x->dealt_to[i] = -1;
    for (int r = 0; st == LAB_OK && r < x->size; ++r) {
        if (x->ranks[r].have_hello) lab_deal_weight(x->dealer, r, x->ranks[r].hello.jobs);
        if (x->ranks[r].status != LAB_RANK_RUNNING) lab_deal_retire(x->dealer, r);
    }
    return st;
}

void lab_mpi_settle(lab_mpi_ctx *x, int interrupted)
{
    for (size_t i = 0; i < x->n_all; ++i) {
        if (x->got[i]) continue;
        int r = x->dealt_to[i];
        lab_job_outcome *o = &x->all[i].o;
        memset(o, 0, sizeof *o);
        if (interrupted) {
            o->outcome = LAB_OUT_ERROR;
            o->not_run = 1;
            snprintf(o->error, sizeof o->error, "interrupted");
            continue;
        }
        x->rank_failed = 1;
        if (r < 0) {
            o->outcome = LAB_OUT_ERROR;
            snprintf(o->error, sizeof o->error, "not dealt to any MPI rank: no rank was left to take it");
            continue;
        }
        lab_mpi_peer *rk = &x->ranks[r];
        o->outcome = rk->status == LAB_RANK_CRASHED ? LAB_OUT_CRASH : rk->status == LAB_RANK_HUNG ? LAB_OUT_HANG
                                                                                                  : LAB_OUT_ERROR;
        snprintf(o->error, sizeof o->error, "not reported by MPI rank %d: %s", r, rk->why[0] ? rk->why : "no reason known");
    }
}

int lab_mpi_failed(lab_mpi_ctx *x, int interrupted, int *lost)
{
    *lost = 0;
    for (int r = 0; r < x->size; ++r) {
        lab_mpi_peer *rk = &x->ranks[r];
        if (interrupted && rk->status == LAB_RANK_RUNNING) continue; /* stopped by the interrupt */
        x->rank_failed |= rk->status != LAB_RANK_DONE || rk->why[0];
        *lost |= rk->status == LAB_RANK_HUNG || rk->status == LAB_RANK_CRASHED;
    }
    return x->rank_failed;
}

#define LAB_MPI_SPLIT "dealt on demand: rank 0 answers a request with a chunk of every incident asked for, each half " \
                      "of the asking rank's share of that incident's cost left (guided self-scheduling); an incident " \
                      "run in seed batches by the rank's share of its whole cost at once, no less than one batch run, " \
                      "what the shares' rounding leaves over going with the last share"

/* mpi.deals: one object a deal, {"deal", "rank", "at_s", ("window"), "chunks": [{"incident", "first_seed",
 * "last_seed", "cases", "cost_s"}]}; mpi.deals_complete false when the log could not grow. */
static lab_status lab_mpi_deals_json(const lab_mpi_ctx *x, cJSON *mpi)
{
    cJSON *deals = cJSON_AddArrayToObject(mpi, "deals"), *chunks = NULL;
    if (!deals || !cJSON_AddBoolToObject(mpi, "deals_complete", !x->log_lost)) return LAB_ERR_NOMEM;
    for (size_t k = 0; k < x->n_log; ++k) {
        const lab_mpi_deal_log *e = &x->log[k];
        if (k == 0 || e->deal != x->log[k - 1].deal) {
            cJSON *d = cJSON_CreateObject();
            if (!d) return LAB_ERR_NOMEM;
            cJSON_AddItemToArray(deals, d);
            cJSON_AddNumberToObject(d, "deal", e->deal);
            cJSON_AddNumberToObject(d, "rank", e->rank);
            cJSON_AddNumberToObject(d, "at_s", e->at_s);
            if (x->windowed) cJSON_AddNumberToObject(d, "window", e->window);
            if (!(chunks = cJSON_AddArrayToObject(d, "chunks"))) return LAB_ERR_NOMEM;
        }
        cJSON *c = cJSON_CreateObject();
        if (!c) return LAB_ERR_NOMEM;
        cJSON_AddItemToArray(chunks, c);
        char seed[24];
        cJSON_AddStringToObject(c, "incident", e->incident);
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)e->first_seed);
        cJSON_AddRawToObject(c, "first_seed", seed);
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)e->last_seed);
        cJSON_AddRawToObject(c, "last_seed", seed);
        cJSON_AddNumberToObject(c, "cases", (double)e->cases);
        if (!cJSON_AddNumberToObject(c, "cost_s", e->cost_s)) return LAB_ERR_NOMEM;
    }
    return LAB_OK;
}

lab_status lab_mpi_summary_fields(void *vctx, struct cJSON *root)
{
    const lab_mpi_ctx *x = vctx;
    cJSON *mpi = cJSON_AddObjectToObject(root, "mpi");
    cJSON *arr = cJSON_AddArrayToObject(root, "ranks");
    if (!mpi || !arr) return lab_err_set(LAB_ERR_NOMEM, "--mpi: out of memory for the summary's ranks");
    cJSON_AddNumberToObject(mpi, "ranks", x->size);
    cJSON_AddStringToObject(mpi, "split", LAB_MPI_SPLIT);
    cJSON_AddNumberToObject(mpi, "seed_groups", (double)x->groups_total);
    cJSON_AddNumberToObject(mpi, "chunks", (double)x->chunks);
    cJSON_AddNumberToObject(mpi, "window", x->windowed ? (double)x->check_groups : 0); /* cases a window; 0: none */
    cJSON_AddBoolToObject(mpi, "rank_failed", x->rank_failed);
    if (lab_mpi_deals_json(x, mpi) != LAB_OK) return lab_err_set(LAB_ERR_NOMEM, "--mpi: out of memory for the summary's deals");
    for (int r = 0; r < x->size; ++r) {
        const lab_mpi_peer *rk = &x->ranks[r];
        cJSON *o = cJSON_CreateObject();
        if (!o) return lab_err_set(LAB_ERR_NOMEM, "--mpi: out of memory for the summary's ranks");
        cJSON_AddNumberToObject(o, "rank", r);
        if (rk->have_hello) {
            cJSON_AddStringToObject(o, "host", rk->hello.host);
            cJSON_AddNumberToObject(o, "pid", (double)rk->hello.pid);
            cJSON_AddNumberToObject(o, "local_rank", rk->hello.local_rank);
            cJSON_AddNumberToObject(o, "local_size", rk->hello.local_size);
            cJSON_AddNumberToObject(o, "jobs", rk->hello.jobs);
            cJSON_AddStringToObject(o, "jobs_from", rk->hello.jobs_from);
            cJSON_AddStringToObject(o, "device", rk->hello.device);
        } else {
            cJSON_AddNullToObject(o, "host");
        }
        cJSON_AddNumberToObject(o, "chunks", (double)rk->chunks);
        cJSON_AddNumberToObject(o, "cases", (double)rk->n_dealt);
        cJSON_AddNumberToObject(o, "reported", (double)rk->n_got);
        cJSON_AddNumberToObject(o, "wall_s", rk->wall_s);
        cJSON_AddStringToObject(o, "status", lab_mpi_status_name(rk->status));
        if (rk->why[0]) cJSON_AddStringToObject(o, "why", rk->why);
        cJSON_AddItemToArray(arr, o);
    }
    return LAB_OK;
}

void lab_mpi_print_ranks(const lab_mpi_ctx *x, FILE *report, int rank_failed)
{
    int hosts = 0;
    for (int r = 0; r < x->size; ++r) {
        int seen = 0;
        for (int q = 0; q < r; ++q)
            seen |= x->ranks[q].have_hello && x->ranks[r].have_hello && !strcmp(x->ranks[q].hello.host, x->ranks[r].hello.host);
        hosts += x->ranks[r].have_hello && !seen;
    }
    fprintf(report, "mpi: %d ranks on %d host%s, %zu seed groups dealt on demand in %zu chunks", x->size, hosts,
            hosts == 1 ? "" : "s", x->groups_total, x->chunks);
    if (x->windowed) fprintf(report, ", in %u windows of at most %zu cases", x->window, x->check_groups);
    fprintf(report, "\n");
    fprintf(report, "%-5s %-20s %-8s %-5s %-4s %6s %6s %8s %8s  %-8s %s\n", "rank", "host", "pid", "local", "jobs", "chunks",
            "cases", "reported", "wall_s", "status", "device");
    for (int r = 0; r < x->size; ++r) {
        const lab_mpi_peer *rk = &x->ranks[r];
        fprintf(report, "%-5d %-20s %-8lld %-5d %-4d %6zu %6zu %8zu %8.2f  %-8s %s\n", r,
                rk->have_hello ? rk->hello.host : "?", rk->have_hello ? (long long)rk->hello.pid : -1LL,
                rk->have_hello ? rk->hello.local_rank : -1, rk->have_hello ? rk->hello.jobs : -1, rk->chunks, rk->n_dealt,
                rk->n_got, rk->wall_s, lab_mpi_status_name(rk->status), rk->have_hello ? rk->hello.device : "?");
        if (rk->have_hello) fprintf(report, "      jobs from %s\n", rk->hello.jobs_from);
        if (rk->why[0]) fprintf(report, "      %s\n", rk->why);
    }
    if (rank_failed) fprintf(report, "NOT OK: a rank failed (see above); the merged files are written\n");
    fflush(report);
    fflush(stdout);
    fflush(stderr);
}

#endif
