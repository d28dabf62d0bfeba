# mk/config.mk: compilers, flags, build directory, sanitizer and CUDA switches.

comma := ,
CC      ?= cc
SANITIZE ?=
# Build outputs: build/ for the normal build, build/san-<list> for a sanitizer build, build/nocuda for a
# build asked to leave CUDA out (CUDA=0 on the command line or in the environment) so that it and the
# normal build coexist. A machine without nvcc builds without CUDA in build/ (CUDA defaults to 0 there).
ifneq ($(strip $(SANITIZE)),)
BUILD   := build/san-$(subst $(comma),-,$(SANITIZE))
else ifeq ($(filter command line environment,$(origin CUDA))$(CUDA),command line0)
BUILD   := build/nocuda
else ifeq ($(filter command line environment,$(origin CUDA))$(CUDA),environment0)
BUILD   := build/nocuda
else
BUILD   := build
endif

# -ffp-contract=off: no silent FMA contraction, so float results are the ones the source says. The -Werror= ones are
# the warnings that are always a wrong call (a pointer of another type, a function with no declaration).
CFLAGS_BASE := -std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-parameter -Wno-format-truncation -Wno-missing-field-initializers -ffp-contract=off -fno-strict-aliasing \
               -Werror=incompatible-pointer-types -Werror=implicit-function-declaration -Werror=int-conversion \
               -Ilab
# The layering as compile errors: lab/ sees only lab/ (CFLAGS_BASE); kernels/ and incidents/ see lab/ and
# kernels/; each wing of replay/ sees itself and the wings below it, in the order cli > scaleout > engine > report >
# gpu (the command on top; GPU sharing and the machine model at the bottom); the tests see everything. An include
# that runs back up does not compile (`make layering-check` proves it).
REPLAY_INC_gpu      = -Ikernels -Ireplay/gpu
REPLAY_INC_report   = $(REPLAY_INC_gpu) -Ireplay/report
REPLAY_INC_engine   = $(REPLAY_INC_report) -Ireplay/engine
REPLAY_INC_scaleout = $(REPLAY_INC_engine) -Ireplay/scaleout
REPLAY_INC_cli      = $(REPLAY_INC_scaleout) -Ireplay/cli
LAB_INC = $(REPLAY_INC_cli) -I.
ifneq ($(strip $(SANITIZE)),)
CFLAGS_BASE += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS_SAN := -fsanitize=$(SANITIZE)
endif

# pkg-config flags, evaluated once and only when first used (after the deps step has run).
PKG_MODULES := criterion libcjson libcrypto
PKG_CFLAGS = $(eval PKG_CFLAGS := $(shell pkg-config --cflags libcjson libcrypto))$(PKG_CFLAGS)
PKG_LIBS   = $(eval PKG_LIBS := $(shell pkg-config --libs libcjson libcrypto))$(PKG_LIBS)
CRIT_CFLAGS = $(eval CRIT_CFLAGS := $(shell pkg-config --cflags criterion))$(CRIT_CFLAGS)
CRIT_LIBS   = $(eval CRIT_LIBS := $(shell pkg-config --libs criterion))$(CRIT_LIBS)

# CUDA: compiled where nvcc exists (CUDA=0 turns it off); sanitizer builds leave it out, since the
# CUDA runtime does not run under AddressSanitizer's default shadow layout.
NVCC      ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
# The GPU architectures the build carries (mk/cuda_arch.sh): empty or "auto" builds for the GPUs nvidia-smi lists here,
# else (no GPU visible, a CI build host) the fat binary, SASS for sm_75 .. sm_120 plus the newest PTX; CUDA_ARCH=sm_80,
# CUDA_ARCH="sm_80 sm_90", CUDA_ARCH=compute_80 (PTX only) choose. CUDA_ARCHS is the list chosen, asked once.
CUDA_ARCH ?=
ifeq ($(strip $(SANITIZE)),)
CUDA ?= $(if $(NVCC),1,0)
else
CUDA ?= 0
endif
ifeq ($(CUDA),1)
CUDA_HOME   ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_DEFS   := -DLAB_HAVE_CUDA=1
CUDA_LIBS   := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lstdc++
CUDA_ARCHS  := $(shell CUDA_ARCH='$(CUDA_ARCH)' NVCC='$(NVCC)' mk/cuda_arch.sh)
ifeq ($(strip $(CUDA_ARCHS)),)
$(error CUDA_ARCH='$(CUDA_ARCH)': no architecture to build (mk/cuda_arch.sh said why above); CUDA=0 builds without CUDA)
endif
CUDA_GENCODE := $(shell mk/cuda_arch.sh --flags $(CUDA_ARCHS))
LAB_CUDA_ARCH_STAMP := $(BUILD)/gen/cuda_archs
# --threads 0: nvcc compiles a file's architectures in parallel (the fat binary's eight for each .cu file)
NVCCFLAGS   ?= -O3 $(CUDA_GENCODE) --threads 0 -Ilab -Ikernels -I. -Xcompiler -fno-strict-aliasing
endif

# MPI (Open MPI, for `lab replay --mpi`): only build/lab links it, through replay/scaleout/lab_mpi*.c; the lab
# library and the tests do not. Sanitizer builds leave it out (MPI=1 turns it on there too).
ifeq ($(strip $(SANITIZE)),)
MPI ?= 1
else
MPI ?= 0
endif
MPI_CFLAGS = $(if $(filter 1,$(MPI)),$(eval MPI_CFLAGS := $(shell pkg-config --cflags ompi-c) -DLAB_HAVE_MPI=1)$(MPI_CFLAGS))
MPI_LIBS   = $(if $(filter 1,$(MPI)),$(eval MPI_LIBS := $(shell pkg-config --libs ompi-c))$(MPI_LIBS))

CFLAGS  ?=
CFLAGS  := $(CFLAGS_BASE) $(CUDA_DEFS) $(CFLAGS)
LDLIBS  := -lm -lpthread
