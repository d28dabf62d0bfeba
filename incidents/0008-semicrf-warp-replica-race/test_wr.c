/* test_wr (0008-semicrf-warp-replica-race): placeholder while the incident is built. */
#include <criterion/criterion.h>

#include "lab_test_case.h"

extern const lab_incident wr_incident;

Test(semicrf_wr, fix_passes_seed_3) { lab_case_result r = lab_test_run(&wr_incident, "fix-barrier", 3, "."); cr_expect(r.passed, "%s", r.detail); }
