// copyprobe: do synchronous pageable copies serialise the threads of one process (one context)? T threads, each
// `iters` x (H2D of S bytes, a kernel over it, D2H), pageable (malloc) or pinned (cudaMallocHost) host memory, or
// pageable into a per-thread pinned staging buffer (memcpy + cudaMemcpyAsync). Prints aggregate GB/s and wall.
// nvcc -O2 -arch=sm_90 --default-stream per-thread -o copyprobe copyprobe.cu -lpthread
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static int mode, iters; static size_t S;
__global__ void touch(float *p, size_t n) { size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) p[i] = p[i] * 1.0001f + 1.0f; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void *run(void *arg) {
    (void)arg; float *d, *h, *pin = NULL;
    cudaMalloc(&d, S);
    if (mode == 1) cudaMallocHost(&h, S); else { h = (float *)malloc(S); memset(h, 1, S); }
    if (mode == 2) cudaMallocHost(&pin, S);
    size_t n = S / 4;
    for (int i = 0; i < iters; ++i) {
        if (mode == 2) { memcpy(pin, h, S); cudaMemcpyAsync(d, pin, S, cudaMemcpyHostToDevice, cudaStreamPerThread); }
        else cudaMemcpy(d, h, S, cudaMemcpyHostToDevice);
        touch<<<(unsigned)((n + 255) / 256), 256>>>(d, n);
        if (mode == 2) { cudaMemcpyAsync(pin, d, S, cudaMemcpyDeviceToHost, cudaStreamPerThread); cudaStreamSynchronize(cudaStreamPerThread); memcpy(h, pin, S); }
        else cudaMemcpy(h, d, S, cudaMemcpyDeviceToHost);
    }
    cudaError_t e = cudaStreamSynchronize(cudaStreamPerThread);
    if (e != cudaSuccess) fprintf(stderr, "error %s\n", cudaGetErrorString(e));
    return NULL;
}
int main(int argc, char **argv) {
    int T = atoi(argv[1]); mode = atoi(argv[2]); S = (size_t)atof(argv[3]) * 1024; iters = atoi(argv[4]);
    cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync); cudaFree(0);
    pthread_t th[64];
    double t0 = now();
    for (int i = 0; i < T; ++i) pthread_create(&th[i], NULL, run, NULL);
    for (int i = 0; i < T; ++i) pthread_join(th[i], NULL);
    double w = now() - t0;
    printf("T=%2d %-8s S=%7zu KiB iters=%d: wall %.3f s, %.2f GB/s both ways, %.1f us per copy pair per thread\n", T,
           mode == 0 ? "pageable" : mode == 1 ? "pinned" : "staged", S / 1024, iters, w, 2.0 * T * iters * S / w / 1e9, w / iters * 1e6);
    return 0;
}
