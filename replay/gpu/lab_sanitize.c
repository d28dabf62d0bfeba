/* lab_sanitize: runs one case under NVIDIA compute-sanitizer through `lab case`; findings join the outcome. */
#include "lab_sanitize.h"

#include <cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "lab_isolate.h"
#include "lab_json.h"

#define LAB_SANITIZE_TAG "LAB-CASE "

lab_status lab_sanitize_tool_check(const char *tool)
{
    if (tool && (!strcmp(tool, "memcheck") || !strcmp(tool, "initcheck") || !strcmp(tool, "racecheck"))) return LAB_OK;
    return lab_err_set(LAB_ERR_ARG, "unknown compute-sanitizer tool '%s' (memcheck, initcheck, racecheck)",
                       tool ? tool : "(none)");
}

void lab_sanitize_print_result(FILE *f, lab_status st, const lab_case_result *r)
{
    cJSON *o = cJSON_CreateObject(), *m = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "status", (double)st);
    cJSON_AddStringToObject(o, "error", st != LAB_OK ? lab_err_msg() : "");
    cJSON_AddBoolToObject(o, "verdict_set", r->verdict_set);
    cJSON_AddBoolToObject(o, "passed", r->passed);
    cJSON_AddBoolToObject(o, "skipped", r->skipped);
    cJSON_AddNumberToObject(o, "skip_class", r->skip_class);
    cJSON_AddStringToObject(o, "detail", r->detail);
    for (int i = 0; i < r->n_metrics; ++i)
        if (isfinite(r->metrics[i].value)) cJSON_AddNumberToObject(m, r->metrics[i].name, r->metrics[i].value);
        else cJSON_AddNullToObject(m, r->metrics[i].name);
    cJSON_AddItemToObject(o, "metrics", m);
    fputs(LAB_SANITIZE_TAG, f);
    if (!lab_json_fput(f, o, LAB_JSON_COMPACT)) fputs("{}\n", f);
    fflush(f);
    cJSON_Delete(o);
}

/* Reads back a LAB-CASE line into r; the case's own status and error text into *st / err. */
static int lab_sanitize_parse(const char *line, lab_case_result *r, int *st, char *err, size_t len)
{
    cJSON *o = cJSON_Parse(line);
    if (!o) return 0;
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "status");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "detail");
    *st = cJSON_IsNumber(s) ? s->valueint : LAB_ERR_FORMAT;
    snprintf(err, len, "%s", cJSON_IsString(e) ? e->valuestring : "");
    r->verdict_set = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "verdict_set"));
    r->passed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "passed"));
    r->skipped = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "skipped"));
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "skip_class");
    r->skip_class = cJSON_IsNumber(k) ? k->valueint : LAB_SKIP_MISSING;
    snprintf(r->detail, sizeof r->detail, "%s", cJSON_IsString(d) ? d->valuestring : "");
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(o, "metrics"))
        lab_result_metric(r, m->string, cJSON_IsNumber(m) ? m->valuedouble : NAN);
    cJSON_Delete(o);
    return 1;
}

lab_status lab_sanitize_case(const lab_case *c, const char *tool, const char *lab_bin, lab_case_result *r)
{
    lab_status st = lab_sanitize_tool_check(tool);
    if (st != LAB_OK) return st;
    /* An argv, never a shell: the lab's path, the incident and variant names reach the tool as they are. The
     * case is told which tool watches it (--sanitize): it then allocates exactly, so that the tool sees
     * every stray access instead of a guard zone absorbing it. */
    char seed[24];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)c->seed);
    char *argv[] = {"compute-sanitizer", "--tool", (char *)tool, "--print-limit", "4", "--error-exitcode", "86",
                    (char *)lab_bin, "case", (char *)c->incident->id, (char *)c->variant->name, seed, "--backend",
                    (char *)lab_backend_name(c->backend), "--sanitize", (char *)tool, NULL};
    FILE *p;
    pid_t pid;
    st = lab_isolate_spawn_read(argv, &p, &pid);
    if (st != LAB_OK) return st;
    char line[4096], first_err[160] = "", last[240] = "";
    long n_err = -1;
    int have = 0, inner = LAB_OK;
    char inner_err[240] = "";
    memset(r, 0, sizeof *r);
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0]) snprintf(last, sizeof last, "%s", line);
        /* memcheck/initcheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: H hazards displayed
         * (E errors, W warnings)", where only errors count. */
        const char *sum = strstr(line, "ERROR SUMMARY: "), *race = strstr(line, "RACECHECK SUMMARY: ");
        if (sum) n_err = strtol(sum + 15, NULL, 10);
        if (race && strchr(race, '(')) n_err = strtol(strchr(race, '(') + 1, NULL, 10);
        /* The first finding: "========= Invalid __global__ write of size 4 bytes" and the like. */
        if (!first_err[0] && !strncmp(line, "========= ", 10) && !strstr(line, "COMPUTE-SANITIZER") && line[10] != ' ' &&
            !strstr(line, "SUMMARY"))
            snprintf(first_err, sizeof first_err, "%s", line + 10);
        if (!strncmp(line, LAB_SANITIZE_TAG, strlen(LAB_SANITIZE_TAG)))
            have = lab_sanitize_parse(line + strlen(LAB_SANITIZE_TAG), r, &inner, inner_err, sizeof inner_err);
    }
    int ws = 0;
    if (lab_isolate_spawn_wait(p, pid, &ws) != LAB_OK) return LAB_ERR_IO;
    if (WIFSIGNALED(ws)) raise(WTERMSIG(ws)); /* the case crashed: so does its job, with the same signal */
    if (!have) {
        /* The tool passes a target's death by signal S on as exit status 128 + S, as shells do. */
        if (WIFEXITED(ws) && WEXITSTATUS(ws) > 128 && WEXITSTATUS(ws) < 128 + 32) raise(WEXITSTATUS(ws) - 128);
        if (WIFEXITED(ws) && WEXITSTATUS(ws) == 127) return lab_err_set(LAB_ERR_IO, "cannot run %s", lab_bin);
        return lab_err_set(LAB_ERR_IO, "%s gave no case result (exit %d): %s", tool,
                           WIFEXITED(ws) ? WEXITSTATUS(ws) : -1, last);
    }
    if (inner != LAB_OK) return lab_err_set((lab_status)inner, "%s", inner_err);
    lab_result_metric(r, "sanitizer_errors", n_err < 0 ? NAN : (double)n_err);
    if (r->skipped) return LAB_OK;
    int expect = c->variant->role == LAB_ROLE_BUG && c->variant->sanitizer && !strcmp(c->variant->sanitizer, tool);
    /* The tool that names the variant decides its detection, on every seed: its stated rate (a property of the
     * variant's own criterion) does not apply to this case (lab_verdict). */
    lab_result_metric(r, "sanitizer_expected", expect);
    if (n_err > 0) {
        char detail[sizeof r->detail];
        snprintf(detail, sizeof detail, "%s", r->detail);
        lab_result_verdict(r, 0, "%s: %ld errors: %s (case: %s)", tool, n_err, first_err, detail);
    } else if (expect) {
        lab_result_verdict(r, 1, "%s found nothing in a variant it should flag", tool);
    } else if (n_err < 0) {
        return lab_err_set(LAB_ERR_IO, "%s printed no ERROR SUMMARY: %s", tool, last);
    }
    return LAB_OK;
}
