/* test_incident (NNNN-slug): what is particular to this incident (tests/test_incidents.c already checks
 * the contract, the goldens and that every fix passes and every bug is detected). */
#include <criterion/criterion.h>

#include "lab_incident.h"

extern const lab_incident nnnn_incident;

/* Replace with the story's hand example and every documented limit of the fix. */
Test(nnnn, the_fix_passes_and_the_bug_fails_on_seed_7)
{
    lab_case_result r;
    cr_assert_eq(lab_case_run_named(&nnnn_incident, "fix", 7, LAB_BACKEND_CPU, ".", &r), LAB_OK, "%s", lab_err_msg());
    cr_expect(r.passed, "%s", r.detail);
    cr_assert_eq(lab_case_run_named(&nnnn_incident, "bug-what", 7, LAB_BACKEND_CPU, ".", &r), LAB_OK);
    cr_expect(!r.passed, "%s", r.detail);
}
