/* lab_semicrf_case: the semi-CRF case group shared by incidents 0001 and 0002: one seed's problem and float64 reference, made once. */
#include <stdlib.h>

#include "lab_semicrf.h"

lab_status lab_semicrf_group_setup(const lab_case *c, void **group)
{
    lab_semicrf_group *g = calloc(1, sizeof *g);
    if (!g) return lab_err_set(LAB_ERR_NOMEM, "semicrf: out of memory for the group of seed %llu",
                               (unsigned long long)c->seed);
    lab_status st = lab_semicrf_case_problem(&g->p, c->seed);
    if (st != LAB_OK) {
        free(g);
        return st;
    }
    if ((st = lab_semicrf_reference(&g->p, &g->ref)) != LAB_OK) {
        lab_semicrf_problem_free(&g->p);
        free(g);
        return st;
    }
    *group = g;
    return LAB_OK;
}

void lab_semicrf_group_teardown(void *group)
{
    lab_semicrf_group *g = group;
    if (!g) return;
    lab_semicrf_ref_free(&g->ref);
    lab_semicrf_problem_free(&g->p);
    free(g);
}
