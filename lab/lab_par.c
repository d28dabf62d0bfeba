/* lab_par: a parallel loop over independent items on POSIX threads (lab_par.h). */
#include "lab_par.h"

#include "lab_cpus.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    size_t n;
    lab_par_fn fn;
    void *ctx;
    pthread_mutex_t mu;
    size_t next;      /* the next item to hand out */
    size_t failed;    /* lowest failing item, n when none */
    lab_status st;    /* its status */
    char msg[1024];   /* its message */
} lab_par_loop;

static void *lab_par_worker(void *arg)
{
    lab_par_loop *L = arg;
    for (;;) {
        pthread_mutex_lock(&L->mu);
        size_t i = L->failed < L->n ? L->n : L->next++;
        pthread_mutex_unlock(&L->mu);
        if (i >= L->n) return NULL;
        lab_status st = L->fn(L->ctx, i);
        if (st != LAB_OK) {
            pthread_mutex_lock(&L->mu);
            if (i < L->failed) {
                L->failed = i;
                L->st = st;
                snprintf(L->msg, sizeof L->msg, "%s", lab_err_msg());
            }
            pthread_mutex_unlock(&L->mu);
        }
    }
}

lab_status lab_par_for(size_t n, int threads, lab_par_fn fn, void *ctx)
{
    if (threads <= 1 || n <= 1) {
        for (size_t i = 0; i < n; ++i) {
            lab_status st = fn(ctx, i);
            if (st != LAB_OK) return st;
        }
        return LAB_OK;
    }
    if ((size_t)threads > n) threads = (int)n;
    lab_par_loop L = {.n = n, .fn = fn, .ctx = ctx, .next = 0, .failed = n, .st = LAB_OK};
    pthread_mutex_init(&L.mu, NULL);
    pthread_t *tid = malloc((size_t)(threads - 1) * sizeof *tid);
    int made = 0;
    while (tid && made < threads - 1 && pthread_create(&tid[made], NULL, lab_par_worker, &L) == 0) ++made;
    lab_par_worker(&L); /* the calling thread works too: a loop runs even if no thread could be made */
    for (int t = 0; t < made; ++t) pthread_join(tid[t], NULL);
    free(tid);
    pthread_mutex_destroy(&L.mu);
    if (L.failed < n) return lab_err_set(L.st, "%s", L.msg);
    return LAB_OK;
}

int lab_par_threads(void)
{
    int ncpu = lab_cpus_usable();
    return ncpu >= 8 ? ncpu / 4 : 1;
}
