/* lab_sanitize: runs one case under NVIDIA compute-sanitizer (memcheck, initcheck, racecheck) through
 * `lab case`, and makes the sanitizer's findings part of the case's outcome. */
#ifndef LAB_SANITIZE_H
#define LAB_SANITIZE_H

#include <stdio.h>

#include "lab_incident.h"

/* Checks a tool name: LAB_ERR_ARG naming it unless memcheck, initcheck or racecheck. */
lab_status lab_sanitize_tool_check(const char *tool);

/* `lab case` output: one line "LAB-CASE {json}" with the run's status, error text, verdict, detail and
 * metrics, so a parent process can read back a case that ran in-process under a tool. */
void lab_sanitize_print_result(FILE *f, lab_status st, const lab_case_result *r);

/* Runs case c in a fresh `<lab_bin> case ID VARIANT SEED --backend B` under `compute-sanitizer --tool
 * tool` (with --sanitize tool, so the case allocates exactly), and fills r with what the case reported plus the metric "sanitizer_errors". The sanitizer's
 * findings decide: any finding fails the case ("memcheck: 3 errors: Invalid __global__ write ..."), so a
 * fix must be clean; a bug variant whose `sanitizer` is this tool is detected only by a finding (without
 * one it passes: the tool lost it), and on every seed: the metric "sanitizer_expected" 1 tells the verdict
 * that its stated rate does not apply (lab_verdict.h); other bug variants keep their own verdict. A case whose process was
 * killed by a signal (or that the tool reports as exit status 128 + signal with no result) re-raises it
 * (the outcome is CRASH). LAB_ERR_UNSUPPORTED when compute-sanitizer is
 * not on PATH; LAB_ERR_IO when the tool's output holds no case result (its last line is quoted). */
lab_status lab_sanitize_case(const lab_case *c, const char *tool, const char *lab_bin, lab_case_result *r);

#endif
