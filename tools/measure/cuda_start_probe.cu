/* cuda_start_probe: what a CUDA worker's start-up and per-case driver calls cost when many processes start at once
 * on a host of several GPUs. A diagnostic for the scheduler (replay/engine/lab_sched.h), not part of the lab binary.
 *
 *   cuda_start_probe PROCS [GATE]
 *
 * Forks PROCS children at one moment. Child i uses GPU i mod G of PROBE_GPUS (a comma list of UUIDs or indices put
 * in CUDA_VISIBLE_DEVICES; unset: the default device) and, with PROBE_MPS=DIR, is a client of the MPS daemon whose
 * pipe folder is DIR/<g>/pipe. GATE > 0: at most GATE children create their context at a time (a token pipe).
 * Each child times, from the common start: its context (cudaFree(0)), its first kernel, 50 cudaMalloc/cudaFree pairs
 * of 8 MiB, 50 cudaMallocAsync/cudaFreeAsync pairs from the device's pool with its release threshold at the maximum,
 * 50 pageable 1 MiB host-to-device copies, and prints one line; the parent prints the aggregate. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

__global__ void probe_touch(float *p) { p[threadIdx.x] += 1.0f; }

#define CK(call)                                                                                 \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "child %d: %s: %s\n", idx, #call, cudaGetErrorString(e_));         \
            _exit(1);                                                                            \
        }                                                                                        \
    } while (0)

static void child(int idx, double t0, int gate_r, int gate_w)
{
    char tok;
    if (gate_r >= 0 && read(gate_r, &tok, 1) != 1) _exit(2);
    double ts = now_s() - t0;
    CK(cudaFree(0));
    double tc = now_s() - t0;
    if (gate_w >= 0 && write(gate_w, &tok, 1) != 1) _exit(2);
    float *d;
    CK(cudaMalloc((void **)&d, 4096));
    probe_touch<<<1, 32>>>(d);
    CK(cudaDeviceSynchronize());
    double tk = now_s() - t0;
    double a = now_s();
    for (int i = 0; i < 50; ++i) {
        void *p;
        CK(cudaMalloc(&p, 8u << 20));
        probe_touch<<<1, 32>>>((float *)p);
        CK(cudaFree(p));
    }
    double malloc_ms = (now_s() - a) * 1000.0 / 50;
    cudaMemPool_t pool;
    CK(cudaDeviceGetDefaultMemPool(&pool, 0));
    uint64_t thr = UINT64_MAX;
    CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &thr));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    a = now_s();
    for (int i = 0; i < 50; ++i) {
        void *p;
        CK(cudaMallocAsync(&p, 8u << 20, s));
        probe_touch<<<1, 32, 0, s>>>((float *)p);
        CK(cudaFreeAsync(p, s));
        CK(cudaStreamSynchronize(s));
    }
    double async_ms = (now_s() - a) * 1000.0 / 50;
    static char host[1 << 20];
    memset(host, idx, sizeof host);
    void *h;
    CK(cudaMalloc(&h, sizeof host));
    a = now_s();
    for (int i = 0; i < 50; ++i) CK(cudaMemcpy(h, host, sizeof host, cudaMemcpyHostToDevice));
    double copy_ms = (now_s() - a) * 1000.0 / 50;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    double sys = ru.ru_stime.tv_sec + 1e-6 * ru.ru_stime.tv_usec;
    printf("child %3d start %.3f ctx_ready %.3f first_kernel %.3f malloc_free_ms %.3f async_ms %.3f h2d_1MiB_ms %.3f "
           "cpu_s %.3f sys_s %.3f\n",
           idx, ts, tc, tk, malloc_ms, async_ms, copy_ms, cpu, sys);
    fflush(stdout);
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: cuda_start_probe PROCS [GATE]\n");
        return 2;
    }
    int procs = atoi(argv[1]), gate = argc > 2 ? atoi(argv[2]) : 0;
    const char *gpus = getenv("PROBE_GPUS"), *mps = getenv("PROBE_MPS");
    char list[64][96];
    int ng = 0;
    if (gpus && *gpus) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s", gpus);
        for (char *t = strtok(buf, ","); t && ng < 64; t = strtok(NULL, ",")) snprintf(list[ng++], sizeof list[0], "%s", t);
    }
    int gp[2] = {-1, -1};
    if (gate > 0) {
        if (pipe(gp) != 0) return 1;
        for (int i = 0; i < gate; ++i)
            if (write(gp[1], "t", 1) != 1) return 1;
    }
    double t0 = now_s();
    for (int i = 0; i < procs; ++i) {
        pid_t p = fork();
        if (p == 0) {
            if (ng > 0) {
                setenv("CUDA_VISIBLE_DEVICES", list[i % ng], 1);
                if (mps && *mps) {
                    char d[512];
                    snprintf(d, sizeof d, "%s/%d/pipe", mps, i % ng);
                    setenv("CUDA_MPS_PIPE_DIRECTORY", d, 1);
                    snprintf(d, sizeof d, "%s/%d/log", mps, i % ng);
                    setenv("CUDA_MPS_LOG_DIRECTORY", d, 1);
                }
            }
            child(i, t0, gp[0], gp[1]);
        }
    }
    int bad = 0;
    for (int i = 0; i < procs; ++i) {
        int ws;
        if (wait(&ws) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) ++bad;
    }
    printf("procs %d gpus %d gate %d mps %s: all done in %.3f s, %d failed\n", procs, ng, gate, mps && *mps ? "yes" : "no",
           now_s() - t0, bad);
    return bad != 0;
}
