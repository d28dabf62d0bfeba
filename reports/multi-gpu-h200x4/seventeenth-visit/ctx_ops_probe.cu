/* ctx_ops_probe: what the CUDA calls of a case cost when T threads of one process (one context) make them at once,
 * against T processes (a context each), one call kind at a time (seventeenth visit).
 *
 *   ctx_ops_probe threads|procs T REPS
 *
 * Every worker makes its context, waits for the others (a barrier), then runs REPS rounds of each operation in turn,
 * on a stream of its own, all workers together: the wall of each operation over all workers gives its rate. 4 MiB
 * buffers (the size of a semi-CRF case's images). */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BYTES (4u << 20)
#define NOPS 8
static const char *op_name[NOPS] = {
    "stream create+destroy", "pool alloc+free (own stream)", "H2D 4 MiB pageable", "H2D 4 MiB pinned",
    "D2H 4 MiB pageable", "D2H 4 MiB pinned", "launch + stream sync", "launch + device sync"};

__global__ void tiny(float *p) { p[threadIdx.x] += 1.0f; }

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                        \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

/* Shared between workers (threads or processes): a barrier counter per phase and each phase's start and end. */
typedef struct {
    volatile int arrived[NOPS + 1];
    double t0[NOPS];       /* when the barrier let worker 0 start the operation */
    double t1[NOPS][256];  /* when each worker ended it */
    double ready[256];
} shared_t;
static shared_t *sh;
static int T, REPS;

static void barrier(int phase)
{
    __atomic_fetch_add(&sh->arrived[phase], 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&sh->arrived[phase], __ATOMIC_SEQ_CST) < T) usleep(50);
}

static void worker(int w, double start)
{
    if (cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess) (void)cudaGetLastError(); /* set already */
    CK(cudaFree(0));
    sh->ready[w] = now() - start;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void *d, *pinned, *pageable = malloc(BYTES);
    memset(pageable, 1, BYTES);
    CK(cudaMalloc(&d, BYTES));
    CK(cudaMallocHost(&pinned, BYTES));
    for (int op = 0; op < NOPS; ++op) {
        barrier(op);
        if (w == 0) sh->t0[op] = now();
        for (int r = 0; r < REPS; ++r) {
            switch (op) {
            case 0: {
                cudaStream_t x;
                CK(cudaStreamCreate(&x));
                CK(cudaStreamDestroy(x));
            } break;
            case 1: {
                void *p;
                CK(cudaMallocAsync(&p, BYTES, s));
                CK(cudaFreeAsync(p, s));
                CK(cudaStreamSynchronize(s));
            } break;
            case 2: CK(cudaMemcpyAsync(d, pageable, BYTES, cudaMemcpyHostToDevice, s)); CK(cudaStreamSynchronize(s)); break;
            case 3: CK(cudaMemcpyAsync(d, pinned, BYTES, cudaMemcpyHostToDevice, s)); CK(cudaStreamSynchronize(s)); break;
            case 4: CK(cudaMemcpyAsync(pageable, d, BYTES, cudaMemcpyDeviceToHost, s)); CK(cudaStreamSynchronize(s)); break;
            case 5: CK(cudaMemcpyAsync(pinned, d, BYTES, cudaMemcpyDeviceToHost, s)); CK(cudaStreamSynchronize(s)); break;
            case 6: tiny<<<1, 32, 0, s>>>((float *)d); CK(cudaStreamSynchronize(s)); break;
            case 7: tiny<<<1, 32, 0, s>>>((float *)d); CK(cudaDeviceSynchronize()); break;
            }
        }
        sh->t1[op][w] = now();
    }
    barrier(NOPS);
}

static void *thread_main(void *a)
{
    double *start = (double *)a;
    static int next = 0;
    worker(__atomic_fetch_add(&next, 1, __ATOMIC_SEQ_CST), *start);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s threads|procs T REPS\n", argv[0]);
        return 2;
    }
    int threads = !strcmp(argv[1], "threads");
    T = atoi(argv[2]), REPS = atoi(argv[3]);
    if (T < 1 || T > 256 || REPS < 1) return 2;
    sh = (shared_t *)mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    memset((void *)sh, 0, sizeof *sh);
    double start = now();
    if (threads) {
        pthread_t t[256];
        for (int i = 0; i < T; ++i) pthread_create(&t[i], NULL, thread_main, &start);
        for (int i = 0; i < T; ++i) pthread_join(t[i], NULL);
    } else {
        for (int i = 0; i < T; ++i)
            if (fork() == 0) {
                worker(i, start);
                _exit(0);
            }
        while (wait(NULL) > 0) {
        }
    }
    double last = 0;
    for (int i = 0; i < T; ++i)
        if (sh->ready[i] > last) last = sh->ready[i];
    printf("%s T=%d reps=%d: contexts ready by %.2f s\n", argv[1], T, REPS, last);
    for (int op = 0; op < NOPS; ++op) {
        double end = 0, ops = (double)T * REPS;
        for (int i = 0; i < T; ++i)
            if (sh->t1[op][i] > end) end = sh->t1[op][i];
        double wall = end - sh->t0[op];
        printf("  %-30s %8.0f ops/s  %8.3f ms a call per worker", op_name[op], ops / wall, 1e3 * wall / REPS);
        if (op >= 2 && op <= 5) printf("  %6.1f GB/s", ops * BYTES / wall / 1e9);
        printf("\n");
    }
    return 0;
}
