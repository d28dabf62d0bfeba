/* test_incident (NNNN-slug): the bug is detected, the fix passes, the goldens verify. */
#include <criterion/criterion.h>

#include "lab_incident.h"

Test(nnnn, bug_detected_and_fix_passes)
{
    const lab_incident *inc = lab_incident_find("NNNN-slug");
    cr_assert_not_null(inc);
    for (uint64_t seed = 1; seed <= 4; ++seed) {
        lab_case_result r = {0};
        lab_case c = {inc, lab_incident_variant(inc, "fix"), seed, LAB_BACKEND_CPU, "."};
        cr_assert_eq(c.variant->run_cpu(&c, &r), LAB_OK);
        cr_expect(r.passed, "fix seed %llu: %s", (unsigned long long)seed, r.detail);
        lab_case_result b = {0};
        c.variant = lab_incident_variant(inc, "bug-what");
        cr_assert_eq(c.variant->run_cpu(&c, &b), LAB_OK);
        cr_expect(!b.passed, "bug seed %llu not detected: %s", (unsigned long long)seed, b.detail);
    }
}
