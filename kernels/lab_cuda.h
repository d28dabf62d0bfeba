/* lab_cuda: is a CUDA device usable, what is it, and CUDA errors as lab statuses; plain C may include it. */
#ifndef LAB_CUDA_H
#define LAB_CUDA_H

#include <stddef.h>

#include "lab_incident.h" /* C++ guards of its own */

#ifdef __cplusplus
extern "C" {
#endif

/* lab_err.h has no C++ guards of its own: included here, inside extern "C", its functions keep C
 * linkage when a .cu file (compiled as C++) includes this header first. */
#include "lab_err.h"

/* Facts about one CUDA device and the CUDA software under it, for reports that compare GPUs. */
typedef struct {
    int device;              /* ordinal */
    char name[256];          /* e.g. "NVIDIA H200" */
    int cc_major, cc_minor;  /* compute capability */
    int multiprocessors;
    size_t total_mem;        /* bytes of device memory */
    size_t free_mem;         /* bytes free when asked */
    int driver_version;      /* cudaDriverGetVersion: 1000 * major + 10 * minor (12080 is 12.8) */
    int runtime_version;     /* cudaRuntimeGetVersion, same encoding */
} lab_cuda_info;

/* Is a CUDA device usable by this process? LAB_OK when device 0 exists and a context on it can be
 * created. LAB_ERR_UNSUPPORTED when there is no device (no driver, no GPU, or none visible): why
 * receives a one-line reason such as "no CUDA device: cudaGetDeviceCount: no CUDA-capable device is
 * detected". LAB_ERR_DEVICE when a device is listed but cannot be used (context creation fails): a
 * broken GPU is an error, not a reason to skip. The reason is also the lab error message. why may be
 * NULL; len is its capacity. Before it creates the context it asks for blocking waits
 * (cudaDeviceScheduleBlockingSync): a replay runs one worker per core, each with a context on a shared GPU,
 * and a worker that spins while it waits takes a core from the others' CPU work. LAB_CUDA_SYNC=auto in the
 * environment leaves the driver's choice (it spins when there are no more contexts than cores). */
lab_status lab_cuda_ready(char *why, size_t len);

/* Fills *info for device `device` (what cannot change is queried once per process; free_mem every call).
 * LAB_ERR_DEVICE (message "file:line: cudaXxx: <CUDA error text>")
 * if a query fails; info is then partly filled. */
lab_status lab_cuda_device_info(int device, lab_cuda_info *info);

/* How a host thread waits for a timed kernel here: launches one kernel that spins on the SM clock for about
 * kernel_ms, waits for it on an event made by lab_cuda_event_create, and gives the CPU seconds this process spent
 * during the wait over the wait's wall seconds (*cpu_frac: near 0 when the wait sleeps, near 1 when it spins) and the
 * wait's wall milliseconds (*wait_ms, may be NULL). Call after lab_cuda_ready. LAB_ERR_ARG for kernel_ms outside
 * 1..10000; LAB_ERR_DEVICE. */
lab_status lab_cuda_wait_probe(double kernel_ms, double *cpu_frac, double *wait_ms);

/* Ends a stream-ordered GPU run: frees the non-NULL bufs[0..n) on `stream` (a cudaStream_t; cudaFreeAsync, so the
 * frees complete in stream order after the run's work) and destroys the stream. A NULL stream means none was made,
 * and so nothing was allocated on it: nothing is done. Returns st, or when st is LAB_OK the first failure of these
 * calls. */
lab_status lab_cuda_stream_release(lab_status st, void *stream, void *const *bufs, size_t n);

/* The CUDA modules of this binary (each .cu file that defines kernels is one module: its SASS for each architecture
 * built and its PTX), each named by one of its kernels: what the load check below loads. A .cu file registers itself
 * with LAB_CUDA_MODULE(kernel) at file scope, as an incident registers itself (a linker section: adding a module edits
 * nothing elsewhere). */
typedef struct {
    const char *file;        /* the .cu file as compiled, e.g. "kernels/lab_nvfp4.cu" */
    const char *kernel;      /* the kernel's name as written */
    const void *fn;          /* the kernel (its host stub), what cudaFuncGetAttributes takes */
} lab_cuda_module;

/* How many modules this binary registers, and the i-th (i < count; stable order within one binary). Neither makes a
 * CUDA call: the parent of every case may ask. */
size_t lab_cuda_module_count(void);
const lab_cuda_module *lab_cuda_module_at(size_t i);

/* What loading the modules on the current device gave (lab_cuda_modules_check). */
typedef struct {
    size_t modules;          /* modules checked */
    long failed;             /* the first module that failed (index for lab_cuda_module_at), -1 when none did */
    int error;               /* its cudaError_t (e.g. 209, cudaErrorNoKernelImageForDevice), 0 when none failed */
    int binary_version;      /* cudaFuncAttributes of the first module: the SASS architecture that runs (90 for sm_90) */
    int ptx_version;         /* ... and the PTX architecture it came from (equal to binary_version for native code, or
                                the PTX's when the driver JIT-compiled it; also equal for PTX JIT-compiled for its own
                                architecture, so native or JIT is decided by the architectures the build carries) */
    double seconds;          /* wall time of the loads: the JIT compilation where the driver compiles PTX */
} lab_cuda_load;

/* Loads one kernel of every module on the current device (cudaFuncGetAttributes, which loads its module: the SASS for
 * this GPU's architecture, or its PTX JIT-compiled), after lab_cuda_ready. LAB_OK when all load; LAB_ERR_DEVICE when one
 * does not (the message "<file>: cudaFuncGetAttributes(<kernel>): <CUDA error text>", e.g. "no kernel image is available
 * for execution on the device" for a build without this architecture, "the provided PTX was compiled with an
 * unsupported toolchain" for PTX newer than the driver), with *out saying which. The check stops at the first failure. */
lab_status lab_cuda_modules_check(lab_cuda_load *out);

/* A variant that needs a newer GPU declares it in its run function, before any launch (the per-variant SKIP of the
 * incident contract, never an ERROR): when the current device's compute capability is below need (10 * major + minor,
 * e.g. 80), records in *r SKIP of class needs-arch with "needs compute capability X.Y (what); this
 * GPU (<name>) is A.B" and returns 1; else returns 0 and leaves *r alone (call after lab_cuda_ready). what names the feature ("cp.async", "bf16
 * tensor cores"). A device query that fails returns 0: the run then meets the device's error itself. */
int lab_cuda_skip_below(lab_case_result *r, int need, const char *what);

/* The CUDA runtime's text for error code e (cudaGetErrorString: no CUDA context is made). */
const char *lab_cuda_error_text(int e);

/* Records a failed CUDA call as the lab error "file:line: cudaXxx: <err>", where cudaXxx is `call` up to
 * its first '(', and returns LAB_ERR_DEVICE. Used by LAB_CUDA_CHECK. */
lab_status lab_cuda_fail(const char *file, int line, const char *call, const char *err);

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
/* In a .cu file that defines kernels, once at file scope after one of them: registers the file as a CUDA module for the
 * load check (lab_cuda_modules_check), named by that kernel (a template kernel with one instantiation, in parentheses
 * when its arguments hold a comma). */
#define LAB_CUDA_MODULE(kernel_fn)                                                                                     \
    static const lab_cuda_module lab_cuda_module_self = {__FILE__, #kernel_fn, (const void *)(kernel_fn)};            \
    __attribute__((used, section("lab_cuda_modules"))) static const lab_cuda_module *const lab_cuda_module_reg =      \
        &lab_cuda_module_self

/* In .cu files: evaluates a CUDA runtime call; on failure returns LAB_ERR_DEVICE from the enclosing
 * function with "file:line: cudaXxx: <cudaGetErrorString>" as the lab error message. */
#define LAB_CUDA_CHECK(call)                                                                       \
    do {                                                                                           \
        cudaError_t lab_cuda_e_ = (call);                                                          \
        if (lab_cuda_e_ != cudaSuccess)                                                            \
            return lab_cuda_fail(__FILE__, __LINE__, #call, cudaGetErrorString(lab_cuda_e_));      \
    } while (0)

/* Creates an event (timing kept) that a host thread waits on the way lab_cuda_ready's mode says. Without
 * cudaEventBlockingSync a thread in cudaEventSynchronize busy-waits whatever the device's schedule flag is (CUDA
 * runtime API, cudaEventSynchronize), so every timed kernel of a worker held a core for the kernel's length: 0008's
 * 1000-seed replay spent about half of its CPU seconds so. LAB_CUDA_SYNC=auto keeps the default (spinning) event. */
cudaError_t lab_cuda_event_create(cudaEvent_t *e);

/* Waits for the work the calling thread issued on its default stream and returns its first error (a kernel's fault
 * included). The lab's GPU code issues a case's work on the default stream: the legacy one in the lab's build, the
 * thread's own where it is built with `--default-stream per-thread`. Unlike cudaDeviceSynchronize, it does not wait
 * for the work of other threads sharing the process's context, so cases run on threads of one process do not wait
 * for each other's kernels. */
static inline cudaError_t lab_cuda_sync(void) { return cudaStreamSynchronize(0); }

/* The same, for functions that must release resources: stores the status in st and jumps to label. */
#define LAB_CUDA_CHECK_GOTO(st, call, label)                                                       \
    do {                                                                                           \
        cudaError_t lab_cuda_e_ = (call);                                                          \
        if (lab_cuda_e_ != cudaSuccess) {                                                          \
            (st) = lab_cuda_fail(__FILE__, __LINE__, #call, cudaGetErrorString(lab_cuda_e_));      \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)
#endif

#endif
