/* lab_arch: the GPU architectures this build carries, what a GPU runs of them (its own machine code, PTX that the
 * driver JIT-compiles, or nothing), the one refusal when the build cannot run on a GPU of the replay, and the JIT
 * cache warmed once before the workers start. */
#ifndef LAB_ARCH_H
#define LAB_ARCH_H

#include <cJSON.h>
#include <stddef.h>

#include "lab_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Contract. An architecture is written as nvcc names it: sm_XY is machine code (SASS) for compute capability X.Y,
 * compute_XY is PTX for it; a trailing 'a' or 'f' (sm_90a) is an architecture-specific target. A compute capability
 * is held as 10 * major + minor (9.0 is 90, 12.0 is 120). The driver's rule, which the check below and the report
 * follow: a GPU of capability M.m runs SASS built for M.k with k <= m (an 'a' target only for M.m itself), else
 * JIT-compiles the newest PTX at or below M.m, else has nothing to run ("no kernel image is available"). Nothing here
 * makes a CUDA context in the calling process: the loads run in the device probe's child (lab_device.h). */

#define LAB_ARCH_MAX 32

/* An architecture list: its SASS and PTX targets. */
typedef struct {
    int n_sass, n_ptx;
    int sass[LAB_ARCH_MAX];          /* 10 * major + minor */
    int sass_specific[LAB_ARCH_MAX]; /* 1 for an 'a'/'f' target */
    int ptx[LAB_ARCH_MAX];
    int ptx_specific[LAB_ARCH_MAX];
} lab_arch_list;

/* What a GPU runs of a build. */
typedef enum { LAB_ARCH_NONE, LAB_ARCH_NATIVE, LAB_ARCH_JIT } lab_arch_code;

/* "none", "native", "jit". */
const char *lab_arch_code_name(lab_arch_code c);

/* Parses words ("sm_75 sm_90 compute_90", spaces or commas between them) into *l. LAB_ERR_ARG naming the word that is
 * not sm_XY or compute_XY, or a list longer than LAB_ARCH_MAX; *l is then partly filled. An empty list is LAB_OK with
 * nothing in it (a build without CUDA). */
lab_status lab_arch_parse(const char *words, lab_arch_list *l);

/* What a GPU of capability cc runs of l (the rule above); *from (may be NULL) gets the architecture it runs, e.g. 90
 * for sm_90 or 80 for compute_80 (0 for none). */
lab_arch_code lab_arch_code_for(const lab_arch_list *l, int cc, int *from);

/* The architectures this binary carries, as mk/cuda_arch.sh chose them ("sm_90 compute_90"); "" in a build without
 * CUDA. */
const char *lab_arch_built(void);

/* The toolkit that built it ("13.0.88" from nvcc's version line; "" without CUDA or when unknown). */
const char *lab_arch_toolkit(void);

/* The one message for a GPU this build cannot run on, into buf: the GPU (its entry gpu, e.g. "0", and name), its
 * compute capability, why (the CUDA error of the load), the architectures carried, and the command that rebuilds for
 * it ("make clean && make CUDA_ARCH=sm_XY", or plain `make clean && make` on the GPU's machine). Never fails (a long
 * message is cut at len). */
void lab_arch_refusal(char *buf, size_t len, const char *gpu, const char *name, int cc, const char *carried, const char *why);

/* Sets CUDA_CACHE_PATH, where the driver keeps what it JIT-compiled, unless the environment sets it: a folder of the
 * lab's, $XDG_CACHE_HOME/incident-lab/cuda-jit, else $HOME/.cache/incident-lab/cuda-jit, else
 * $TMPDIR/incident-lab-cuda-jit-<uid> (made 0700 when missing), so that the warm-up below and every worker read one
 * cache, and a later replay on the machine finds it warm. Call before the device probe: the probe's child and the
 * workers inherit it. Never fails: where no folder can be made the variable is left unset (the driver's default). */
void lab_arch_cache_setup(void);

/* Before any case: checks that this build's kernels load on every GPU the replay will use. The first GPU: the device
 * probe's child loads one kernel of every CUDA module (lab_device_gpu_first); a GPU of another compute capability
 * (nvidia-smi's compute_cap per UUID, or, where it does not answer, every other GPU) gets a probe child of its own.
 * Where the first GPU runs PTX by JIT, a warm-up child then loads every kernel (CUDA_MODULE_LOADING=EAGER) into the JIT
 * cache (lab_arch_cache_setup), timed, so that the workers find the code compiled instead of compiling it each. LAB_OK
 * when every GPU loads the kernels (and when no GPU is usable: nothing to check; the backend decides that apart);
 * LAB_ERR_DEVICE with the one message of lab_arch_refusal in msg (and as the lab error) otherwise. */
lab_status lab_arch_check(char *msg, size_t len);

/* One line for the replay's progress output about the code the first GPU runs, into buf ("GPU NVIDIA H100 80GB HBM3
 * (9.0) runs PTX compute_80 JIT-compiled by the driver (...); compiled once into <cache> before the workers: 20.1 s in
 * the load check, 0.9 s in the warm-up"): the JIT's cost is the two together; "" when the GPU runs its own machine code
 * or no GPU was probed. */
void lab_arch_note(char *buf, size_t len);

/* What the first GPU ran, for report.json's device.gpu.code: "carried" (the architectures), "runs" (native, jit or
 * none), "from" (sm_XY or compute_XY), "binary_version" and "ptx_version" as the loaded kernel reports them ("9.0"),
 * "load_check_s" (the probe's loads: the JIT of every module where
 * the cache was cold), "jit_warmup_s" (the warm-up child, context included; null where none ran), "jit_cache" (CUDA_CACHE_PATH, null when unset), "toolkit"
 * (nvcc's version) and "driver" (the NVIDIA driver's version from /proc/driver/nvidia/version, null when unknown).
 * NULL when out of memory or when no GPU was usable. */
cJSON *lab_arch_json(void);

#ifdef __cplusplus
}
#endif

#endif
