/* lab_cuda: is a CUDA device usable, what is it, and CUDA errors as lab statuses; plain C may include it. */
#include "lab_cuda.h"
#include "lab_clock.h"
#include "lab_devmem.h"
#include "lab_incident.h"
#include "lab_isolate.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern "C" lab_status lab_cuda_fail(const char *file, int line, const char *call, const char *err)
{
    size_t n = strcspn(call, "(");
    while (n > 0 && call[n - 1] == ' ') --n;
    return lab_err_set(LAB_ERR_DEVICE, "%s:%d: %.*s: %s", file, line, (int)n, call, err);
}

/* Copies the current lab error message into why[0..len). */
static void lab_cuda_why(char *why, size_t len)
{
    if (why && len) snprintf(why, len, "%s", lab_err_msg());
}

/* 1 unless LAB_CUDA_SYNC=auto asks for the driver's heuristic (lab_cuda.h, lab_cuda_ready). */
static int lab_cuda_blocking(void)
{
    const char *m = getenv("LAB_CUDA_SYNC");
    return !(m && !strcmp(m, "auto"));
}

/* How this process's host threads wait for the GPU (lab_cuda.h, lab_cuda_ready): blocking on an interrupt unless
 * LAB_CUDA_SYNC=auto. Set before the context exists; if one already does (a test that made it earlier), the flag
 * may not take and the wait stays as it was: a matter of CPU time, never of results. */
static void lab_cuda_sync_mode(void)
{
    if (!lab_cuda_blocking()) return;
    if (cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess) (void)cudaGetLastError();
}

cudaError_t lab_cuda_event_create(cudaEvent_t *e)
{
    return cudaEventCreateWithFlags(e, lab_cuda_blocking() ? cudaEventBlockingSync : cudaEventDefault);
}

extern "C" lab_status lab_cuda_stream_release(lab_status st, void *stream, void *const *bufs, size_t n)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (!s) return st;
    for (size_t i = 0; i < n; ++i) {
        if (!bufs[i]) continue;
        cudaError_t e = cudaFreeAsync(bufs[i], s);
        if (e != cudaSuccess && st == LAB_OK) st = lab_cuda_fail(__FILE__, __LINE__, "cudaFreeAsync", cudaGetErrorString(e));
    }
    cudaError_t e = cudaStreamDestroy(s); /* the frees complete in stream order after it returns */
    if (e != cudaSuccess && st == LAB_OK) st = lab_cuda_fail(__FILE__, __LINE__, "cudaStreamDestroy", cudaGetErrorString(e));
    return st;
}

extern "C" lab_status lab_cuda_ready(char *why, size_t len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    lab_status st = LAB_OK;
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* this error is not sticky: clear it so later checks start clean */
        st = lab_err_set(LAB_ERR_UNSUPPORTED, "no CUDA device: cudaGetDeviceCount: %s", cudaGetErrorString(e));
    } else if (n == 0) {
        st = lab_err_set(LAB_ERR_UNSUPPORTED, "no CUDA device: cudaGetDeviceCount found 0 devices");
    } else if ((e = cudaSetDevice(0)) != cudaSuccess || (lab_cuda_sync_mode(), (e = cudaFree(0)) != cudaSuccess)) {
        /* cudaFree(0) forces context creation: a listed but unusable device shows up here. */
        st = lab_err_set(LAB_ERR_DEVICE, "CUDA device 0 is listed but unusable: %s", cudaGetErrorString(e));
    } else if ((e = lab_devmem_init()) != cudaSuccess) {
        st = lab_err_set(LAB_ERR_DEVICE, "CUDA device 0: its memory pool: %s", cudaGetErrorString(e));
    }
    if (st == LAB_OK) {
        if (why && len) why[0] = '\0';
    } else {
        lab_cuda_why(why, len);
    }
    return st;
}

/* What does not change while a process lives (cudaGetDeviceProperties takes milliseconds, and a worker
 * asks once per case): kept per device and thread after the first query. */
#define LAB_CUDA_CACHED 16
static thread_local lab_cuda_info lab_cuda_cache[LAB_CUDA_CACHED];
static thread_local int lab_cuda_cached[LAB_CUDA_CACHED];

extern "C" lab_status lab_cuda_device_info(int device, lab_cuda_info *info)
{
    memset(info, 0, sizeof *info);
    info->device = device;
    if (device >= 0 && device < LAB_CUDA_CACHED && lab_cuda_cached[device]) {
        *info = lab_cuda_cache[device];
    } else {
        cudaDeviceProp p;
        LAB_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
        snprintf(info->name, sizeof info->name, "%s", p.name);
        info->cc_major = p.major;
        info->cc_minor = p.minor;
        info->multiprocessors = p.multiProcessorCount;
        info->total_mem = p.totalGlobalMem;
        LAB_CUDA_CHECK(cudaDriverGetVersion(&info->driver_version));
        LAB_CUDA_CHECK(cudaRuntimeGetVersion(&info->runtime_version));
        if (device >= 0 && device < LAB_CUDA_CACHED) {
            lab_cuda_cache[device] = *info;
            lab_cuda_cached[device] = 1;
        }
    }
    int prev = 0;
    LAB_CUDA_CHECK(cudaGetDevice(&prev));
    LAB_CUDA_CHECK(cudaSetDevice(device));
    size_t free_b = 0, total_b = 0;
    cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
    cudaSetDevice(prev);
    if (e != cudaSuccess) return lab_cuda_fail(__FILE__, __LINE__, "cudaMemGetInfo", cudaGetErrorString(e));
    info->free_mem = free_b; /* this one changes: asked every time */
    return LAB_OK;
}

/* Spins one thread until `cycles` SM clock cycles have passed. */
__global__ void lab_cuda_spin(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

LAB_CUDA_MODULE(lab_cuda_spin);

/* The modules registered by LAB_CUDA_MODULE (the linker makes the section's bounds; this file registers one, so the
 * section exists in every CUDA build). */
extern "C" const lab_cuda_module *const __start_lab_cuda_modules[];
extern "C" const lab_cuda_module *const __stop_lab_cuda_modules[];

extern "C" size_t lab_cuda_module_count(void) { return (size_t)(__stop_lab_cuda_modules - __start_lab_cuda_modules); }

extern "C" const lab_cuda_module *lab_cuda_module_at(size_t i)
{
    return i < lab_cuda_module_count() ? __start_lab_cuda_modules[i] : NULL;
}

extern "C" int lab_cuda_skip_below(lab_case_result *r, int need, const char *what)
{
    int dev = 0;
    lab_cuda_info info;
    if (cudaGetDevice(&dev) != cudaSuccess || lab_cuda_device_info(dev, &info) != LAB_OK) {
        (void)cudaGetLastError();
        return 0;
    }
    int cc = 10 * info.cc_major + info.cc_minor;
    if (cc >= need) return 0;
    lab_result_skip_as(r, LAB_SKIP_NEEDS_ARCH, "needs compute capability %d.%d (%s); this GPU (%s) is %d.%d",
                       need / 10, need % 10, what, info.name, info.cc_major, info.cc_minor);
    return 1;
}

extern "C" const char *lab_cuda_error_text(int e) { return cudaGetErrorString((cudaError_t)e); }

extern "C" lab_status lab_cuda_modules_check(lab_cuda_load *out)
{
    memset(out, 0, sizeof *out);
    out->failed = -1;
    size_t n = lab_cuda_module_count();
    double t0 = lab_clock_now();
    lab_status st = LAB_OK;
    for (size_t i = 0; i < n && st == LAB_OK; ++i) {
        const lab_cuda_module *m = lab_cuda_module_at(i);
        cudaFuncAttributes a;
        cudaError_t e = cudaFuncGetAttributes(&a, m->fn);
        out->modules = i + 1;
        if (e != cudaSuccess) {
            (void)cudaGetLastError(); /* not sticky: the context stays usable for the report's queries */
            out->failed = (long)i;
            out->error = (int)e;
            st = lab_err_set(LAB_ERR_DEVICE, "%s: cudaFuncGetAttributes(%s): %s", m->file, m->kernel, cudaGetErrorString(e));
        } else if (i == 0) {
            out->binary_version = a.binaryVersion;
            out->ptx_version = a.ptxVersion;
        }
    }
    out->seconds = lab_clock_now() - t0;
    return st;
}

extern "C" lab_status lab_cuda_wait_probe(double kernel_ms, double *cpu_frac, double *wait_ms)
{
    if (!(kernel_ms >= 1 && kernel_ms <= 10000)) return lab_err_set(LAB_ERR_ARG, "lab_cuda_wait_probe: kernel_ms %g outside 1..10000", kernel_ms);
    int dev = 0, khz = 0;
    LAB_CUDA_CHECK(cudaGetDevice(&dev));
    LAB_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
    cudaEvent_t done = NULL;
    LAB_CUDA_CHECK(lab_cuda_event_create(&done));
    lab_status st = LAB_OK;
    lab_cuda_spin<<<1, 1>>>((long long)(kernel_ms * (double)khz));
    cudaError_t e = cudaEventRecord(done);
    double c0 = lab_isolate_cpu_seconds(), w0 = lab_clock_now();
    if (e == cudaSuccess) e = cudaEventSynchronize(done);
    double c1 = lab_isolate_cpu_seconds(), w1 = lab_clock_now();
    if (e != cudaSuccess) st = lab_cuda_fail(__FILE__, __LINE__, "cudaEventSynchronize", cudaGetErrorString(e));
    cudaEventDestroy(done);
    if (st == LAB_OK) {
        *cpu_frac = w1 > w0 ? (c1 - c0) / (w1 - w0) : NAN;
        if (wait_ms) *wait_ms = 1e3 * (w1 - w0);
    }
    return st;
}
