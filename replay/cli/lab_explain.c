/* lab_explain: `lab explain ID`: the incident's card as its story opens, then its bug and fix variants live on a few
 * seeds, each case isolated, with the bound each case crossed, and what to try next. Everything it says of the
 * incident comes from the card (lab_card) or from the cases it runs. */
#include "lab_explain.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lab_cli.h"
#include "lab_replay.h"
#include "lab_text.h"
#include "lab_verdict.h"

#define W LAB_TEXT_WIDTH

/* The README's path as the user reads it: relative when root is ".". */
static void lab_explain_readme(const char *root, const char *id, char *buf, size_t len)
{
    if (!strcmp(root, ".")) snprintf(buf, len, "incidents/%s/README.md", id);
    else snprintf(buf, len, "%s/incidents/%s/README.md", root, id);
}

/* One section's markdown as text for a terminal: paragraphs indented by two, list items ("- ") as items. */
static int lab_explain_section(FILE *f, const char *md)
{
    char *plain = lab_card_plain(md ? md : "");
    if (!plain) return -1;
    size_t n = strlen(plain);
    char *para = malloc(n + 1);
    if (!para) {
        free(plain);
        return -1;
    }
    int bad = 0, item = 0;
    size_t len = 0;
    for (const char *p = plain;;) {
        const char *e = strchr(p, '\n');
        size_t ln = e ? (size_t)(e - p) : strlen(p);
        int starts = ln >= 2 && p[0] == '-' && p[1] == ' ';
        int blank = 1;
        for (size_t i = 0; i < ln; ++i) blank &= p[i] == ' ';
        if ((starts || blank) && len) {
            para[len] = '\0';
            bad |= lab_text_wrap(f, para, W, item ? "  - " : "  ", item ? "    " : "  ");
            len = 0;
        }
        if (starts) {
            item = 1;
            memcpy(para, p + 2, ln - 2), len = ln - 2;
        } else if (!blank) {
            if (!len) item = 0;
            else para[len++] = ' ';
            memcpy(para + len, p, ln), len += ln;
        }
        if (!e) break;
        p = e + 1;
    }
    if (len) {
        para[len] = '\0';
        bad |= lab_text_wrap(f, para, W, item ? "  - " : "  ", item ? "    " : "  ");
    }
    free(para), free(plain);
    return bad ? -1 : 0;
}

int lab_explain_card_print(FILE *f, const lab_incident *inc, const lab_card *c, const char *readme)
{
    int bad = lab_text_wrap(f, c->title && *c->title ? c->title : inc->id, W, "", "  ");
    if (readme) bad |= fprintf(f, "(the card at the top of %s; the story goes on below it)\n", readme) < 0;
    for (int s = 0; s < LAB_CARD_N && !bad; ++s) {
        bad |= fputc('\n', f) == EOF;
        if (s == LAB_CARD_VARIANTS) {
            bad |= fprintf(f, "%s  (history: as it ran; hypothesis: a belief put to the test; construction: built by "
                              "the lab)\n", lab_card_heading(LAB_CARD_VARIANTS)) < 0;
            int wname = 0;
            for (int v = 0; v < inc->n_variants; ++v) {
                int l = (int)strlen(inc->variants[v].name);
                if (l > wname) wname = l;
            }
            for (int v = 0; v < inc->n_variants && !bad; ++v) {
                const lab_variant *var = &inc->variants[v];
                const lab_card_variant *cv = lab_card_variant_of(c, var->name);
                char first[128], rest[128];
                snprintf(first, sizeof first, "  %-*s  %s  ", wname, var->name, lab_role_name(var->role));
                snprintf(rest, sizeof rest, "%*s", (int)strlen(first), "");
                const char *why = cv ? cv->why
                                  : var->role == LAB_ROLE_FIX ? "(told under \"The fix\")"
                                                              : "(the card does not name this variant: its story must class "
                                                                "it)";
                char *row = NULL;
                if (cv && var->role == LAB_ROLE_BUG && cv->cls == LAB_CARD_CLASS_NONE) {
                    size_t n = strlen(why) + 64;
                    row = malloc(n);
                    if (row) snprintf(row, n, "(not classed in the card) %s", why);
                }
                bad |= lab_text_wrap(f, row ? row : why, W, first, rest);
                free(row);
            }
            continue;
        }
        bad |= fprintf(f, "%s\n", lab_card_heading((lab_card_section)s)) < 0;
        bad |= lab_explain_section(f, c->text[s]);
    }
    return bad ? -1 : 0;
}

/* The value of a metric for people: integers as they are, else 6 significant digits. */
static void lab_explain_num(double v, char *buf, size_t len)
{
    if (isfinite(v) && fabs(v) < 1e15 && v == floor(v)) snprintf(buf, len, "%.0f", v);
    else snprintf(buf, len, "%.6g", v);
}

/* What one case shows: its outcome and the bound it crossed (a pass: the incident's separating metric against its
 * bound). *named is 0 when a FAIL crossed no bound of the table (its detail says why). *model is 1 when the bound
 * crossed is a `model` count. */
static void lab_explain_cell(const lab_incident *inc, const lab_job_outcome *o, char *buf, size_t len, int *named,
                             int *model)
{
    *named = 1, *model = 0;
    const char *oc = lab_outcome_name(o->outcome);
    if (o->outcome != LAB_OUT_PASS && o->outcome != LAB_OUT_FAIL) {
        snprintf(buf, len, "%-5s", oc);
        *named = 0;
        return;
    }
    double v = NAN, b = NAN;
    const lab_metric_spec *m = o->outcome == LAB_OUT_FAIL ? lab_incident_crossed(inc, &o->r, &v, &b) : NULL;
    if (!m && o->outcome == LAB_OUT_PASS && inc->plots.n_specs > 0 && lab_result_has(&o->r, inc->plots.specs[0].name)) {
        m = &inc->plots.specs[0];
        v = lab_result_get(&o->r, m->name);
        b = m->tolerance_metric ? lab_result_get(&o->r, m->tolerance_metric) : m->tolerance;
    }
    if (!m) {
        snprintf(buf, len, "%-5s", oc);
        *named = o->outcome == LAB_OUT_PASS;
        return;
    }
    *model = m->model;
    char vs[64], bs[64];
    lab_explain_num(v, vs, sizeof vs);
    lab_explain_num(b, bs, sizeof bs);
    if (m->tolerance_metric)
        snprintf(buf, len, "%-5s %s = %s (passes at %s %s = %s)", oc, m->name, vs, m->higher_is_worse ? "<=" : ">=",
                 m->tolerance_metric, bs);
    else
        snprintf(buf, len, "%-5s %s = %s (passes at %s %s)", oc, m->name, vs, m->higher_is_worse ? "<=" : ">=", bs);
}

/* The case's own words: its detail, then its error. */
static int lab_explain_says(FILE *f, size_t seed, const lab_job_outcome *o)
{
    char first[48];
    snprintf(first, sizeof first, "  seed %zu says: ", seed);
    size_t n = strlen(o->r.detail) + strlen(o->error) + 4;
    char *text = malloc(n);
    if (!text) return -1;
    snprintf(text, n, "%s%s%s", o->r.detail, o->r.detail[0] && o->error[0] ? "; " : "", o->error);
    int bad = lab_text_wrap(f, text[0] ? text : "(nothing)", W, first, "    ");
    free(text);
    return bad;
}

/* 1 when every FAIL of bug variant v crossed only `model` bounds and at least one did; else 0. */
static int lab_explain_model_only(const lab_explain_live *x, int v)
{
    size_t nv = (size_t)x->inc->n_variants;
    int any = 0;
    for (size_t s = 0; s < x->n_seeds; ++s) {
        const lab_job_outcome *o = &x->out[s * nv + (size_t)v];
        if (o->outcome != LAB_OUT_FAIL) continue;
        double val, b;
        const lab_metric_spec *m = lab_incident_crossed(x->inc, &o->r, &val, &b);
        if (!m || !m->model) return 0;
        any = 1;
    }
    return any;
}

int lab_explain_live_print(FILE *f, const lab_explain_live *x)
{
    const lab_incident *inc = x->inc;
    size_t nv = (size_t)inc->n_variants;
    const char *be = lab_backend_name(x->backend);
    int bad = fprintf(f, "\nLive: %zu seed%s on %s, each case in its own process\n", x->n_seeds,
                      x->n_seeds == 1 ? "" : "s", be) < 0;
    int all_ok = 1, first_model = -1, first_fix = -1, first_bug = -1;
    size_t first_bug_seed = 1;
    for (size_t v = 0; v < nv; ++v) {
        const lab_variant *var = &inc->variants[v];
        const lab_card_variant *cv = x->card ? lab_card_variant_of(x->card, var->name) : NULL;
        size_t met = 0, judged = 0;
        for (size_t s = 0; s < x->n_seeds; ++s) {
            const lab_job_outcome *o = &x->out[s * nv + v];
            lab_case_record rec = {inc, var, s + 1, x->backend, *o};
            int ok = lab_verdict_case_ok(&rec);
            judged += ok >= 0;
            met += ok == 1;
            all_ok &= ok != 0;
            if (var->role == LAB_ROLE_BUG && first_bug < 0 && ok == 1) first_bug = (int)v, first_bug_seed = s + 1;
        }
        if (var->role == LAB_ROLE_FIX && first_fix < 0) first_fix = (int)v;
        int model = var->role == LAB_ROLE_BUG && lab_explain_model_only(x, (int)v);
        if (model && first_model < 0) first_model = (int)v;
        char head[512];
        const char *cls = cv && var->role == LAB_ROLE_BUG ? lab_card_class_name(cv->cls) : "";
        int n = snprintf(head, sizeof head, "%s (%s%s%s): ", var->name, lab_role_name(var->role), *cls ? ", " : "",
                         cls);
        if (judged == 0)
            snprintf(head + n, sizeof head - (size_t)n, "not judged on %s (every case skipped)", be);
        else if (var->role == LAB_ROLE_FIX)
            snprintf(head + n, sizeof head - (size_t)n, "%s on %zu of %zu seeds%s", "held", met, judged,
                     met == judged ? ", as a fix must" : ": NOT OK, a fix must hold on every seed");
        else if (model)
            snprintf(head + n, sizeof head - (size_t)n, "detected on %zu of %zu seeds, by the CPU model's count alone "
                     "(its outputs pass, as the fixes' do)", met, judged);
        else
            snprintf(head + n, sizeof head - (size_t)n, "detected on %zu of %zu seeds%s", met, judged,
                     met == judged ? ", as a bug variant must be" : ": a bug variant must be detected on every seed "
                                                                  "(or its stated rate)");
        bad |= fputc('\n', f) == EOF;
        bad |= lab_text_wrap(f, head, W, "", "  ");
        for (size_t s = 0; s < x->n_seeds && !bad; ++s) {
            char cell[512], first[32];
            int named, m;
            lab_explain_cell(inc, &x->out[s * nv + v], cell, sizeof cell, &named, &m);
            snprintf(first, sizeof first, "  seed %-4zu ", s + 1);
            bad |= lab_text_wrap(f, cell, W, first, "              ");
        }
        /* the cases' own words: the first seed's, and any whose bound the table does not name or that missed its role */
        for (size_t s = 0; s < x->n_seeds && !bad; ++s) {
            const lab_job_outcome *o = &x->out[s * nv + v];
            char cell[512];
            int named, m;
            lab_explain_cell(inc, o, cell, sizeof cell, &named, &m);
            lab_case_record rec = {inc, var, s + 1, x->backend, *o};
            if (s == 0 || !named || lab_verdict_case_ok(&rec) == 0) bad |= lab_explain_says(f, s + 1, o);
        }
    }
    if (first_model >= 0 && !bad) {
        /* the mechanism cannot fire here: the evidence is the model's count, and the outputs pass like the fixes' */
        const lab_metric_spec *mspec = NULL;
        for (int k = 0; k < inc->plots.n_specs && !mspec; ++k)
            if (inc->plots.specs[k].model) mspec = &inc->plots.specs[k];
        char text[2048];
        int n = snprintf(text, sizeof text, "On %s the mechanism cannot fire: the bug cases fail only on the count "
                         "the lab's CPU model makes of it, and their outputs pass every other bound of the criterion, "
                         "as the fixes' do", be);
        const lab_job_outcome *ob = &x->out[(size_t)first_model], *of = first_fix >= 0 ? &x->out[(size_t)first_fix] : NULL;
        int listed = 0;
        for (int k = 0; of && k < inc->plots.n_specs && n < (int)sizeof text - 200; ++k) {
            const lab_metric_spec *m = &inc->plots.specs[k];
            if (m->model || !lab_result_has(&ob->r, m->name) || !lab_result_has(&of->r, m->name)) continue;
            char a[64], b[64];
            lab_explain_num(lab_result_get(&ob->r, m->name), a, sizeof a);
            lab_explain_num(lab_result_get(&of->r, m->name), b, sizeof b);
            n += snprintf(text + n, sizeof text - (size_t)n, "%s%s %s for %s, %s for %s", listed ? "; " : " (seed 1: ",
                          m->name, a, inc->variants[first_model].name, b, inc->variants[first_fix].name);
            listed = 1;
        }
        if (n < (int)sizeof text - 1)
            n += snprintf(text + n, sizeof text - (size_t)n, "%s.", listed ? ")" : "");
        if (mspec && n < (int)sizeof text - 1)
            snprintf(text + n, sizeof text - (size_t)n, " The evidence here is %s: %s.", mspec->name,
                     mspec->caption ? mspec->caption : "the model's count");
        bad |= fputc('\n', f) == EOF;
        bad |= lab_text_wrap(f, text, W, "", "");
    }
    const char *verdict = !all_ok ? "NOT OK: a fix failed or a bug was not detected (the seeds above say which)."
                          : first_model >= 0 ? "The fixes hold; the bugs are detected by the CPU model's count alone: "
                                               "their damage does not show here."
                                             : "The bug happens and the fix holds.";
    bad |= fputc('\n', f) == EOF;
    bad |= lab_text_wrap(f, verdict, W, "", "");
    /* what to try next */
    char id4[8], cmd[512], readme[4096];
    snprintf(id4, sizeof id4, "%.4s", inc->id);
    lab_explain_readme(x->root, inc->id, readme, sizeof readme);
    bad |= fprintf(f, "\nTry next:\n") < 0;
    if (first_bug < 0)
        for (size_t v = 0; v < nv && first_bug < 0; ++v)
            if (inc->variants[v].role == LAB_ROLE_BUG) first_bug = (int)v;
    if (first_bug >= 0) {
        snprintf(cmd, sizeof cmd, "%s case %s %s %zu%s%s", x->lab_bin, id4, inc->variants[first_bug].name,
                 first_bug_seed, x->backend == LAB_BACKEND_CUDA ? " --backend " : "",
                 x->backend == LAB_BACKEND_CUDA ? be : "");
        bad |= fprintf(f, "  %s\n      one case in this process: what it found, first in words (for a debugger too)\n",
                       cmd) < 0;
    }
    unsigned seeds = inc->default_seeds ? inc->default_seeds : 256;
    bad |= fprintf(f, "  %s replay --incident %s%s%s\n      every seed of the default replay (%u), each case isolated, "
                      "with plots\n", x->lab_bin, id4, x->backend == LAB_BACKEND_CUDA ? " --backend " : "",
                   x->backend == LAB_BACKEND_CUDA ? be : "", seeds) < 0;
    if (first_model >= 0 && x->backend == LAB_BACKEND_CPU && inc->run_cuda)
        bad |= fprintf(f, "  %s explain %s --backend cuda\n      on a GPU, where the mechanism can fire\n", x->lab_bin,
                       id4) < 0;
    char read[4200];
    int has_cause = x->card && lab_card_core_has(x->card, "Root cause");
    int has_crit = x->card && lab_card_core_has(x->card, "What the criterion checks");
    snprintf(read, sizeof read, "read %s below the card%s%s%s%s%s", readme, has_cause || has_crit ? ": " : "",
             has_cause ? "\"Root cause\"" : "", has_cause && has_crit ? ", then " : "",
             has_crit ? "\"What the criterion checks\"" : "", "");
    bad |= lab_text_wrap(f, read, W, "  ", "      ");
    if (bad) return -1;
    return all_ok;
}

/* explain: one job per (seed, variant) pair. */
typedef struct {
    const lab_incident *inc;
    lab_backend backend;
    const char *root;
} lab_explain_ctx;

static lab_status lab_explain_job(void *vctx, size_t job, lab_case_result *r)
{
    lab_explain_ctx *x = vctx;
    lab_case c;
    char gdir[4096];
    size_t nv = (size_t)x->inc->n_variants;
    lab_case_init(&c, x->inc, &x->inc->variants[job % nv], 1 + job / nv, x->backend, x->root, gdir, sizeof gdir);
    return lab_replay_case(&c, r);
}

/* Prints "lab: <message>" and where usage is; returns the usage exit status. */
static int lab_explain_usage(const char *msg)
{
    fprintf(stderr, "lab: %s\n(run `lab explain --help` for usage)\n", msg);
    return LAB_EXIT_USAGE;
}

int lab_explain_cmd(int argc, char **argv, const char *lab_bin, const char *root)
{
    if (argc < 1) return lab_explain_usage("explain needs an incident id");
    const lab_incident *inc = lab_incident_find(argv[0]);
    if (!inc) {
        fprintf(stderr, "lab: unknown incident '%s'\nknown incidents:", argv[0]);
        size_t n;
        const lab_incident *const *all = lab_incident_all(&n);
        for (size_t i = 0; i < n; ++i) fprintf(stderr, " %s", all[i]->id);
        fprintf(stderr, "\n");
        return LAB_EXIT_USAGE;
    }
    uint64_t seeds = 4;
    lab_backend backend = LAB_BACKEND_CPU;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--seeds") && i + 1 < argc) {
            if (lab_cli_u64("--seeds", argv[++i], 1, LAB_CLI_EXPLAIN_SEEDS_MAX, &seeds) != LAB_OK)
                return lab_explain_usage(lab_err_msg());
        } else if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
            if (lab_backend_parse(argv[++i], &backend) != LAB_OK) return lab_explain_usage(lab_err_msg());
        } else {
            char msg[256];
            snprintf(msg, sizeof msg, "explain: unknown flag '%s'", argv[i]);
            return lab_explain_usage(msg);
        }
    }
    lab_card card;
    if (lab_card_load(root, inc->id, &card) != LAB_OK) {
        fprintf(stderr, "lab explain: %s\n", lab_err_msg());
        return LAB_EXIT_FAILED;
    }
    char readme[4096];
    lab_explain_readme(root, inc->id, readme, sizeof readme);
    if (lab_explain_card_print(stdout, inc, &card, readme) != 0) {
        lab_card_free(&card);
        return LAB_EXIT_FAILED;
    }
    fflush(stdout);
    size_t nv = (size_t)inc->n_variants, n;
    if (lab_cli_mul_size((size_t)seeds, nv, "explain --seeds", &n) != LAB_OK) {
        lab_card_free(&card);
        return lab_explain_usage(lab_err_msg());
    }
    lab_job_outcome *out = calloc(n ? n : 1, sizeof *out);
    if (!out) {
        lab_card_free(&card);
        fprintf(stderr, "lab explain: out of memory\n");
        return LAB_EXIT_FAILED;
    }
    lab_explain_ctx ctx = {inc, backend, root};
    lab_status st = lab_isolate_run(n, lab_explain_job, &ctx, lab_isolate_ncpu(), inc->timeout_s > 0 ? inc->timeout_s : 60,
                                    NULL, out);
    lab_explain_live x = {inc, &card, backend, (size_t)seeds, out, lab_bin, root};
    int ok = lab_explain_live_print(stdout, &x);
    free(out);
    lab_card_free(&card);
    if (st != LAB_OK) {
        fprintf(stderr, "lab explain: %s\n", lab_err_msg());
        return LAB_EXIT_FAILED;
    }
    if (ok < 0) return LAB_EXIT_FAILED;
    return ok ? LAB_EXIT_OK : LAB_EXIT_NOT_OK;
}
