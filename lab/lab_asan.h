/* lab_asan: AddressSanitizer as a second witness of the CPU cases' memory bugs: exact-size regions, and an ASan report turned into the case's result. */
#ifndef LAB_ASAN_H
#define LAB_ASAN_H

/* Contract. In a build with -fsanitize=address (`make ... SANITIZE=address`) the replay's workers run each
 * case with lab_case.exact_alloc set (lab_replay), so the case's emulated device memory is exact to
 * AddressSanitizer: bytes past or before a buffer (an emulator's guard zones) are poisoned with
 * lab_asan_poison, and the first stray load or store is an ASan report. In an isolated worker
 * (lab_isolate) that report becomes the case's result: FAIL, detail "AddressSanitizer: <kind>: <READ|WRITE>
 * of size N in <function> (K bytes past the end of <buffer>)" (no addresses: two replays give the same detail), metric
 * "asan_reports" 1, and the worker retires; like a compute-sanitizer finding, any report fails a fix. A bug
 * variant that sets `asan` (lab_incident.h) is, in such a build, detected only by that report: a case of it
 * that runs to its end was not flagged, and lab_asan_judge_unflagged makes it PASS ("AddressSanitizer found
 * nothing"), an XPASS. Outside an ASan build every function here is a no-op and lab_asan_active() is 0. */

#include <stddef.h>

#include "lab_incident.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 in a build with AddressSanitizer, else 0. */
int lab_asan_active(void);

/* Marks [p, p + n) unaddressable to ASan. `what` (kept, not copied; NULL: unnamed) names the buffer that the
 * region follows, so a report there says "N bytes past the end of <what>" (at most 64 named regions at once;
 * more are poisoned unnamed). */
void lab_asan_poison(const void *p, size_t n, const char *what);
/* Makes [p, p + n) addressable again and forgets the names of regions inside it (call before freeing). */
void lab_asan_unpoison(const void *p, size_t n);

/* Called in the reporting process once ASan has printed a report, with its one-line summary; it must end the
 * process (it does not return). */
typedef void (*lab_asan_report_fn)(void *ctx, const char *summary);
/* Arms fn for the reports of this process (NULL: ASan's own ending). */
void lab_asan_on_report(lab_asan_report_fn fn, void *ctx);

/* Reduces an ASan report's text to its summary (see the contract) into out. Exposed for tests. */
void lab_asan_summarize(const char *report, char *out, size_t len);

/* After case c ran to its end without a report: in an ASan build, with exact allocations, a bug variant that
 * declares `asan` was not flagged, and r becomes PASS with a detail that says so (its own verdict kept in
 * the detail). Otherwise r is left as it is. */
void lab_asan_judge_unflagged(const lab_case *c, lab_case_result *r);

#ifdef __cplusplus
}
#endif

#endif
