/* test_incidents: the contract every incident directory must meet, checked over the registry (so an incident's own tests keep only what is particular to it). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lab_fs.h"
#include "lab_golden.h"
#include "lab_incident.h"
#include "lab_par.h"
#include "lab_replay.h"
#ifdef LAB_HAVE_CUDA
#include "lab_cuda.h"
#endif

/* The incident directories under incidents/ (not _template), sorted; *n receives the count. */
static char (*incident_dirs(size_t *n))[64]
{
    static char names[64][64];
    *n = 0;
    DIR *d = opendir("incidents");
    cr_assert_not_null(d, "incidents/ not found (tests run from the repository root)");
    struct dirent *e;
    while ((e = readdir(d)) && *n < 64)
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9') snprintf(names[(*n)++], sizeof names[0], "%s", e->d_name);
    closedir(d);
    qsort(names, *n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    return names;
}

Test(incidents, every_directory_is_registered_with_a_complete_contract)
{
    size_t n;
    char(*dirs)[64] = incident_dirs(&n);
    cr_assert_geq(n, 7, "the lab's incidents");
    for (size_t i = 0; i < n; ++i) {
        const lab_incident *inc = lab_incident_find(dirs[i]);
        cr_assert_not_null(inc, "incidents/%s has no registered incident of that id", dirs[i]);
        cr_expect_str_eq(inc->id, dirs[i]);
        cr_expect_not_null(inc->run_cpu, "%s: run_cpu", inc->id);
        cr_expect(!inc->setup || inc->teardown, "%s: a setup needs its teardown", inc->id);
        cr_expect_not_null(inc->golden_bless, "%s: golden_bless", inc->id);
        cr_expect(inc->title && *inc->title, "%s: a title", inc->id);
        int fixes = 0, bugs = 0;
        for (int v = 0; v < inc->n_variants; ++v) {
            const lab_variant *var = &inc->variants[v];
            cr_expect(var->name && *var->name && var->what && *var->what, "%s variant %d: name and what", inc->id, v);
            fixes += var->role == LAB_ROLE_FIX;
            bugs += var->role == LAB_ROLE_BUG;
            cr_expect(var->role == LAB_ROLE_BUG || (!var->sanitizer && !var->detect && var->min_detect_rate == 0),
                      "%s/%s: a fix states no detection", inc->id, var->name);
            cr_expect(var->min_detect_rate >= 0 && var->min_detect_rate <= 1, "%s/%s: rate", inc->id, var->name);
            for (int w = 0; w < v; ++w)
                cr_expect_str_neq(var->name, inc->variants[w].name, "%s: variant names are unique", inc->id);
        }
        cr_expect_geq(fixes, 1, "%s: at least one fix", inc->id);
        cr_expect_geq(bugs, 1, "%s: at least one bug", inc->id);
        char path[512];
        snprintf(path, sizeof path, "incidents/%s/README.md", inc->id);
        cr_expect_eq(access(path, R_OK), 0, "%s: README.md", inc->id);
        snprintf(path, sizeof path, "incidents/%s/incident.mk", inc->id);
        cr_expect_eq(access(path, R_OK), 0, "%s: incident.mk", inc->id);
    }
}

Test(incidents, every_golden_verifies)
{
    size_t n;
    char(*dirs)[64] = incident_dirs(&n);
    for (size_t i = 0; i < n; ++i) {
        char dir[512];
        snprintf(dir, sizeof dir, "incidents/%s/golden", dirs[i]);
        lab_golden_manifest m;
        memset(&m, 0, sizeof m);
        cr_assert_eq(lab_golden_manifest_read(dir, &m), LAB_OK, "%s", lab_err_msg());
        cr_expect_str_eq(m.incident, dirs[i], "%s: the MANIFEST names its incident", dir);
        size_t ok = 0;
        cr_expect_eq(lab_golden_verify(dir, &m, &ok), LAB_OK, "%s", lab_err_msg());
        cr_expect_gt(ok, 0, "%s: at least one golden file", dir);
        lab_golden_manifest_free(&m);
    }
}

/* Copies the plain files of directory src into directory dst (which exists). */
static void copy_files(const char *src, const char *dst)
{
    DIR *d = opendir(src);
    cr_assert_not_null(d, "%s: %s", src, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d))) {
        char from[1024], to[1024];
        struct stat sb;
        snprintf(from, sizeof from, "%s/%s", src, e->d_name);
        if (e->d_name[0] == '.' || stat(from, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        snprintf(to, sizeof to, "%s/%s", dst, e->d_name);
        char *data;
        size_t len;
        cr_assert_eq(lab_fs_read_all(from, &data, &len), LAB_OK, "%s", lab_err_msg());
        cr_assert_eq(lab_fs_write_atomic(to, data, len), LAB_OK, "%s", lab_err_msg());
        free(data);
    }
    closedir(d);
}

/* Removes directory dir and the plain files in it. */
static void remove_files(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        cr_expect_eq(unlink(path), 0, "%s: %s", path, strerror(errno));
    }
    closedir(d);
    cr_expect_eq(rmdir(dir), 0, "%s: %s", dir, strerror(errno));
}

/* A byte flipped in a copy of each incident's first golden: verification rejects it, naming the file; and the
 * incident's first fix, run at that golden's seed against the copy (the case's golden_dir), stops with an error
 * naming the file rather than judging against it. */
Test(incidents, a_corrupted_golden_is_rejected_and_named, .timeout = 300)
{
    size_t n;
    char(*dirs)[64] = incident_dirs(&n);
    for (size_t i = 0; i < n; ++i) {
        const lab_incident *inc = lab_incident_find(dirs[i]);
        cr_assert_not_null(inc);
        char src[512], tmp[] = "/tmp/lab-golden-XXXXXX";
        snprintf(src, sizeof src, "incidents/%s/golden", dirs[i]);
        cr_assert_not_null(mkdtemp(tmp));
        copy_files(src, tmp);
        lab_golden_manifest m;
        memset(&m, 0, sizeof m);
        cr_assert_eq(lab_golden_manifest_read(tmp, &m), LAB_OK, "%s", lab_err_msg());
        cr_assert_gt(m.n, 0);
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", tmp, m.entries[0].file);
        char *data;
        size_t len;
        cr_assert_eq(lab_fs_read_all(path, &data, &len), LAB_OK, "%s", lab_err_msg());
        data[len - 1] ^= 0x01;
        cr_assert_eq(lab_fs_write_atomic(path, data, len), LAB_OK);
        free(data);
        size_t ok = 0;
        cr_expect_eq(lab_golden_verify(tmp, &m, &ok), LAB_ERR_MISMATCH, "%s: corrupted golden accepted", dirs[i]);
        cr_expect(strstr(lab_err_msg(), m.entries[0].file) != NULL, "%s: error names the file: %s", dirs[i],
                  lab_err_msg());
        const lab_variant *fix = NULL;
        for (int v = 0; v < inc->n_variants && !fix; ++v)
            if (inc->variants[v].role == LAB_ROLE_FIX) fix = &inc->variants[v];
        cr_assert_not_null(fix);
        lab_case c;
        char gdir[4096];
        lab_case_init(&c, inc, fix, m.entries[0].seed, LAB_BACKEND_CPU, ".", gdir, sizeof gdir);
        c.golden_dir = tmp;
        lab_case_result r;
        memset(&r, 0, sizeof r);
        lab_status st = lab_case_run(&c, &r);
        cr_expect_neq(st, LAB_OK, "%s/%s seed %llu judged against a corrupted golden: %s", inc->id, fix->name,
                      (unsigned long long)c.seed, r.detail);
        cr_expect(st == LAB_OK || strstr(lab_err_msg(), m.entries[0].file) != NULL, "%s/%s: error names %s: %s",
                  inc->id, fix->name, m.entries[0].file, lab_err_msg());
        lab_case_release();
        lab_golden_manifest_free(&m);
        remove_files(tmp);
    }
}

/* Every incident's golden_bless, into a fresh folder, writes the same files as the repository's golden/ (same
 * names, same sha256): the goldens are regenerable from the float64 reference, bit for bit. */
Test(incidents, blessing_again_reproduces_every_golden, .timeout = 300)
{
    size_t n;
    char(*dirs)[64] = incident_dirs(&n);
    for (size_t i = 0; i < n; ++i) {
        const lab_incident *inc = lab_incident_find(dirs[i]);
        cr_assert_not_null(inc);
        char src[512], tmp[] = "/tmp/lab-bless-XXXXXX";
        snprintf(src, sizeof src, "incidents/%s/golden", dirs[i]);
        cr_assert_not_null(mkdtemp(tmp));
        cr_assert_eq(inc->golden_bless(tmp), LAB_OK, "%s: %s", inc->id, lab_err_msg());
        lab_golden_manifest m, again;
        memset(&m, 0, sizeof m);
        memset(&again, 0, sizeof again);
        cr_assert_eq(lab_golden_manifest_read(src, &m), LAB_OK, "%s", lab_err_msg());
        cr_assert_eq(lab_golden_manifest_read(tmp, &again), LAB_OK, "%s", lab_err_msg());
        cr_expect_eq(again.n, m.n, "%s: %zu goldens blessed, %zu in the repository", inc->id, again.n, m.n);
        for (size_t k = 0; k < m.n; ++k) {
            const lab_golden_entry *e = lab_golden_find(&again, m.entries[k].file);
            cr_expect_not_null(e, "%s: %s not blessed again", inc->id, m.entries[k].file);
            if (e) cr_expect_str_eq(e->sha256, m.entries[k].sha256, "%s: %s regenerates differently", inc->id, e->file);
        }
        lab_golden_manifest_free(&again);
        lab_golden_manifest_free(&m);
        remove_files(tmp);
    }
}

/* An incident's benchmark and study, where it has them, are a skip (LAB_ERR_UNSUPPORTED) without a usable GPU. */
Test(incidents, a_bench_without_a_gpu_is_a_skip)
{
#ifdef LAB_HAVE_CUDA
    char why[240];
    if (lab_cuda_ready(why, sizeof why) != LAB_ERR_UNSUPPORTED) cr_skip_test("a GPU is usable here: benches run");
#endif
    size_t n;
    char(*dirs)[64] = incident_dirs(&n);
    FILE *devnull = fopen("/dev/null", "w");
    cr_assert_not_null(devnull);
    for (size_t i = 0; i < n; ++i) {
        const lab_incident *inc = lab_incident_find(dirs[i]);
        if (inc && inc->bench)
            cr_expect_eq(inc->bench(devnull), LAB_ERR_UNSUPPORTED, "%s: bench without a GPU: %s", inc->id,
                         lab_err_msg());
        if (inc && inc->study)
            cr_expect_eq(inc->study(devnull), LAB_ERR_UNSUPPORTED, "%s: study without a GPU: %s", inc->id,
                         lab_err_msg());
    }
    fclose(devnull);
}

/* Every incident through the runner on two seeds (isolated, as a replay runs them): every fix passes and
 * every bug is detected by its own stated failure. Seeds 3 and 4: off the golden seeds, so the cases run
 * without goldens too. */
Test(incidents, every_fix_passes_and_every_bug_is_detected, .timeout = 600)
{
    size_t n;
    char(*dirs)[64] = incident_dirs(&n);
    const lab_incident *incs[64];
    for (size_t i = 0; i < n; ++i) cr_assert_not_null(incs[i] = lab_incident_find(dirs[i]));
    uint64_t seeds[2] = {3, 4};
    lab_replay_opts o = {
        .what = {.incidents = incs, .n_incidents = n, .seeds = seeds, .n_seeds = 2, .backend = LAB_BACKEND_CPU},
        .how = {.jobs = 2, .lab_bin = "build/lab", .root = "."}};
    FILE *devnull = fopen("/dev/null", "w");
    lab_verdict verdict; /* not asserted: two seeds are too few for a stated rate's verdict */
    lab_case_record *recs;
    size_t nr;
    cr_assert_eq(lab_replay_run(&o, devnull, &verdict, &recs, &nr), LAB_OK, "%s", lab_err_msg());
    fclose(devnull);
    for (size_t i = 0; i < nr; ++i) {
        const lab_variant *v = recs[i].variant;
        int stochastic = v->role == LAB_ROLE_BUG && v->min_detect_rate > 0 && v->min_detect_rate < 1;
        if (stochastic && recs[i].o.outcome == LAB_OUT_PASS) continue; /* its rate is judged over many seeds */
        cr_expect_eq(lab_verdict_case_ok(&recs[i]), 1, "%s/%s seed %llu: %s %s %s", recs[i].incident->id, v->name,
                     (unsigned long long)recs[i].seed, lab_outcome_name(recs[i].o.outcome), recs[i].o.r.detail,
                     recs[i].o.error);
    }
    free(recs);
}

/* lab_result_metric keeps LAB_MAX_METRICS metrics; one more is an incident's programming error, which aborts
 * (naming the metric on stderr) rather than dropping it. */
Test(incidents, a_metric_past_the_limit_aborts, .signal = SIGABRT)
{
    lab_case_result r;
    memset(&r, 0, sizeof r);
    char name[32];
    for (int i = 0; i < LAB_MAX_METRICS; ++i) {
        snprintf(name, sizeof name, "m%d", i);
        lab_result_metric(&r, name, (double)i);
    }
    lab_result_metric(&r, "m0", -1.0); /* an existing name is updated in place, not added */
    cr_expect_eq(r.n_metrics, LAB_MAX_METRICS);
    cr_expect_eq(lab_result_get(&r, "m0"), -1.0);
    fflush(NULL);
    lab_result_metric(&r, "one_too_many", 1.0);
}

/* One case of the threads test: what it gave alone, and what it gave on a thread beside others. */
typedef struct {
    const lab_incident *inc;
    const lab_variant *v;
    uint64_t seed;
    lab_backend backend;
    lab_status st[2];
    lab_case_result r[2];
} thr_case;

static void thr_run(thr_case *c, int k)
{
    memset(&c->r[k], 0, sizeof c->r[k]);
    c->st[k] = lab_case_run_named(c->inc, c->v->name, c->seed, c->backend, ".", &c->r[k]);
}

/* Item i of the threads' loop (lab_par_for): case i run on whichever thread takes it, its seed's group released
 * after it, so that no thread's cache outlives the loop. */
static lab_status thr_run_on_thread(void *ctx, size_t i)
{
    thr_run(&((thr_case *)ctx)[i], 1);
    lab_case_release();
    return LAB_OK;
}

/* Two results are the same case's: status, verdict and skip, and on the CPU every metric bit for bit (NaN equal to
 * NaN). A GPU case's metrics may differ between any two runs (the order of its atomics: 0001, 0002), so there the
 * verdict is what must not change. */
static int thr_same(const thr_case *c)
{
    const lab_case_result *a = &c->r[0], *b = &c->r[1];
    if (c->st[0] != c->st[1] || a->passed != b->passed || a->skipped != b->skipped) return 0;
    if (c->backend == LAB_BACKEND_CUDA) return 1;
    if (a->n_metrics != b->n_metrics) return 0;
    for (int m = 0; m < a->n_metrics; ++m) {
        double x = a->metrics[m].value, y = b->metrics[m].value;
        if (strcmp(a->metrics[m].name, b->metrics[m].name) || (memcmp(&x, &y, sizeof x) && !(x != x && y != y))) return 0;
    }
    return 1;
}

/* A case run on one of several threads of a process, beside other cases, gives what it gives alone: a case's cached
 * state (its seed's group, the device facts, 0008's inputs) is the thread's own, and the incidents' shared tables are
 * filled once. What a process running several cases at once relies on (docs/performance.md).
 * The CPU cases always run; the CUDA cases where a GPU is usable. Memory bugs are left out: their stray accesses are
 * contained by a process of their own, not by a thread. */
Test(incidents, a_case_on_a_thread_beside_others_gives_what_it_gives_alone, .timeout = 300)
{
    const char *ids[] = {"0001", "0002", "0003", "0004", "0005"};
    lab_backend backends[2] = {LAB_BACKEND_CPU, LAB_BACKEND_CUDA};
    int nb = 1;
#ifdef LAB_HAVE_CUDA
    char why[240];
    if (lab_cuda_ready(why, sizeof why) == LAB_OK) nb = 2;
    else cr_log_info("no usable GPU (%s): the CUDA cases are not run, the CPU cases are", why);
#endif
    thr_case cases[512];
    size_t n = 0;
    for (int b = 0; b < nb; ++b)
        for (size_t i = 0; i < sizeof ids / sizeof ids[0]; ++i) {
            const lab_incident *inc = lab_incident_find(ids[i]);
            cr_assert_not_null(inc, "incident %s", ids[i]);
            for (uint64_t seed = 3; seed <= 4; ++seed)
                for (int v = 0; v < inc->n_variants; ++v) {
                    const lab_variant *var = &inc->variants[v];
                    if (var->sanitizer || var->gpus || (backends[b] == LAB_BACKEND_CUDA && (var->cpu_only || !inc->run_cuda))) continue;
                    cr_assert_lt(n, sizeof cases / sizeof cases[0]);
                    cases[n++] = (thr_case){.inc = inc, .v = var, .seed = seed, .backend = backends[b]};
                }
        }
    for (size_t i = 0; i < n; ++i) thr_run(&cases[i], 0);
    lab_case_release();
    cr_assert_eq(lab_par_for(n, 4, thr_run_on_thread, cases), LAB_OK, "%s", lab_err_msg());
    for (size_t i = 0; i < n; ++i)
        cr_expect(thr_same(&cases[i]), "%s/%s seed %llu on %s: alone %s (%s), on a thread %s (%s)", cases[i].inc->id,
                  cases[i].v->name, (unsigned long long)cases[i].seed, lab_backend_name(cases[i].backend),
                  cases[i].r[0].passed ? "pass" : "fail", cases[i].r[0].detail, cases[i].r[1].passed ? "pass" : "fail",
                  cases[i].r[1].detail);
    cr_log_info("%zu cases compared", n);
}
