# mk/targets.mk: compile rules and the user-facing targets.

.PHONY: all deps test test-slurm replay sanitize bench golden golden-check plots help clean mutants stories stories-check \
        baselines studies

all: $(LAB_BIN)

# The deps step runs before anything is compiled; it installs what is missing on Debian.
deps:
	@mk/deps.sh
$(DEPS_OK): mk/deps.sh
	@mk/deps.sh
	@mkdir -p $(@D) && touch $@

$(BUILD)/obj/lab/%.o: LAB_INC =
$(BUILD)/obj/kernels/%.o: LAB_INC = -Ikernels
$(BUILD)/obj/incidents/%.o: LAB_INC = -Ikernels
$(BUILD)/obj/replay/gpu/%.o: LAB_INC = $(REPLAY_INC_gpu)
$(BUILD)/obj/replay/report/%.o: LAB_INC = $(REPLAY_INC_report)
$(BUILD)/obj/replay/engine/%.o: LAB_INC = $(REPLAY_INC_engine)
$(BUILD)/obj/replay/scaleout/%.o: LAB_INC = $(REPLAY_INC_scaleout)
$(BUILD)/obj/replay/cli/%.o: LAB_INC = $(REPLAY_INC_cli)

$(BUILD)/obj/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LAB_INC) $(LAB_INCIDENT_DEF) $(PKG_CFLAGS) $(if $(findstring test_,$(notdir $<)),$(CRIT_CFLAGS) -Itests) -MMD -MP -c $< -o $@

$(BUILD)/obj/%.cu.o: %.cu $(LAB_CUDA_ARCH_STAMP) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) $(CUDA_DEFS) $(LAB_INCIDENT_DEF) -MMD -MP -c $< -o $@

# The architectures the CUDA objects were built for (mk/cuda_arch.sh): rewritten only when the list changes, so that a
# build for other architectures (CUDA_ARCH=..., or another GPU in the machine) recompiles every .cu file.
ifeq ($(CUDA),1)
.PHONY: lab-cuda-arch-force
lab-cuda-arch-force:
$(LAB_CUDA_ARCH_STAMP): lab-cuda-arch-force
	@mkdir -p $(@D)
	@echo '$(CUDA_ARCHS)' > $@.tmp.$$$$ && { cmp -s $@.tmp.$$$$ $@ || mv $@.tmp.$$$$ $@; }; rm -f $@.tmp.$$$$
endif

# The MPI modules (lab_mpi.o, lab_mpi_*.o) are built with MPI (when MPI=0 lab_mpi.o is a stub and the others are
# empty) and linked into build/lab only; the stamp rebuilds them when MPI changes.
$(LAB_MPI_OBJS): CFLAGS += $(MPI_CFLAGS)
# the RNG fills' batch loops vectorize at -O3 (lab/lab_rng.c says why and what that leaves bit for bit)
$(BUILD)/obj/lab/lab_rng.o: CFLAGS += -O3
# ... and so do its clones built one by one for tests/test_rng.c (tests/rng_clone.h)
$(BUILD)/obj/tests/test_rng_clone_%.o: CFLAGS += -O3
$(LAB_MPI_OBJS): $(BUILD)/.mpi-$(MPI)
$(BUILD)/.mpi-$(MPI):
	@mkdir -p $(@D) && rm -f $(BUILD)/.mpi-* && touch $@
$(LAB_BIN): $(OBJS) $(BUILD)/obj/replay/cli/lab_main.o $(LAB_MPI_OBJS)
	$(CC) $(LDFLAGS_SAN) -o $@ $^ $(PKG_LIBS) $(CUDA_LIBS) $(MPI_LIBS) $(LDLIBS)

$(TEST_BIN): $(OBJS) $(TEST_OBJS)
	$(CC) $(LDFLAGS_SAN) -o $@ $^ $(CRIT_LIBS) $(PKG_LIBS) $(CUDA_LIBS) $(LDLIBS)

# Tests run from the repository root (they read incidents/*/golden and the lab binary). Under
# sanitizers a segfaulting case must still die by its signal (the isolation tests check the signal),
# and Criterion's own allocations kept until exit are not the lab's leaks.
ifneq ($(strip $(SANITIZE)),)
TEST_ENV := ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_abort=0 LSAN_OPTIONS=suppressions=$(CURDIR)/mk/lsan.supp \
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
endif
# Where nvcc exists, the lab's codecs are also cross-checked against the CUDA toolkit's own bf16, fp8
# and fp4 conversions (host code: no GPU needed), before the Criterion suite.
ifeq ($(CUDA),1)
XCHECK_BIN := $(BUILD)/cuda-codec-xcheck
$(XCHECK_BIN): tests/cuda_codec_xcheck.cu lab/lab_format.h lab/lab_format.c lab/lab_hd.h | $(DEPS_OK)
	@mkdir -p $(@D)
	$(NVCC) -O2 -Ilab $< -o $@
endif
# The layering holds: each upward include is a compile error where it would be made (the include paths of
# mk/config.mk): lab/ sees no kernel or wing, kernels/ and incidents/ no wing, and no wing of replay/ a wing above it.
layering_refused = if echo '\#include "$(2)"' | $(CC) $(CFLAGS_BASE) $(3) -fsyntax-only -x c - 2>/dev/null; then \
                     echo "layering: $(1) can include $(2)" >&2; exit 1; fi
.PHONY: layering-check
layering-check:
	@$(call layering_refused,lab/,lab_semicrf.h,)
	@$(call layering_refused,lab/,lab_replay.h,)
	@$(call layering_refused,incidents/,lab_replay.h,-Ikernels)
	@$(call layering_refused,kernels/,lab_replay.h,-Ikernels)
	@$(call layering_refused,replay/gpu,lab_sched.h,$(REPLAY_INC_gpu))
	@$(call layering_refused,replay/gpu,lab_report.h,$(REPLAY_INC_gpu))
	@$(call layering_refused,replay/report,lab_replay.h,$(REPLAY_INC_report))
	@$(call layering_refused,replay/engine,lab_mpi.h,$(REPLAY_INC_engine))
	@$(call layering_refused,replay/engine,lab_cli.h,$(REPLAY_INC_engine))
	@$(call layering_refused,replay/scaleout,lab_cli.h,$(REPLAY_INC_scaleout))
	@echo "layering: lab/ sees no kernel or wing, kernels/ and incidents/ no wing; replay's wings see only those below: cli > scaleout > engine > report > gpu"

test: $(TEST_BIN) $(LAB_BIN) $(XCHECK_BIN) layering-check
	$(if $(XCHECK_BIN),$(XCHECK_BIN))
	$(TEST_ENV) LAB_BIN=$(LAB_BIN) $(TEST_BIN) $(TEST_ARGS)
	LAB_BIN=$(LAB_BIN) PYTHONDONTWRITEBYTECODE=1 python3 -m unittest discover -s tests/python -p 'test_*.py'
	$(STORIES_CHECK)

# The lab on a real one-node Slurm cluster of its own (tests/python/test_slurm.py: srun and sbatch, scancel, a time
# limit, a rank killed, a 1-CPU task), after installing Slurm and munge (mk/deps.sh --slurm: as root or through sudo).
# Where Slurm cannot start, the tests say why and skip. About two minutes on 2 cores; `make test` leaves them out.
test-slurm: $(LAB_BIN)
	@mk/deps.sh --slurm || echo "test-slurm: Slurm could not be installed; the tests will say what is missing"
	LAB_BIN=$(LAB_BIN) LAB_SLURM_TESTS=1 PYTHONDONTWRITEBYTECODE=1 python3 -m unittest discover -v -s tests/python -p test_slurm.py

# The stories' measured numbers (tools/stories/story_numbers.py): the generated blocks of incidents/*/README.md come from
# CPU replays at small seed counts. `make stories` rewrites them; `make test` checks them (about 30 s on 2 cores),
# except in a sanitizer build, whose replay ends a memory bug at ASan's first report and so measures other numbers.
STORIES_CHECK = $(if $(strip $(SANITIZE)),@echo "stories: not checked in a sanitizer build (ASan ends the memory bugs' cases early)",PYTHONDONTWRITEBYTECODE=1 python3 tools/stories/story_numbers.py check --lab $(LAB_BIN))
stories: $(LAB_BIN)
	PYTHONDONTWRITEBYTECODE=1 python3 tools/stories/story_numbers.py write --lab $(LAB_BIN)
stories-check: $(LAB_BIN)
	$(STORIES_CHECK)

# SEEDS empty: every incident's default (256, or fewer where an incident's cases are costly by nature).
SEEDS ?=
BACKEND ?= auto
REPLAY_OUT ?= $(BUILD)/replay
replay: $(LAB_BIN)
	$(LAB_BIN) replay $(if $(SEEDS),--seeds $(SEEDS)) --backend $(BACKEND) --out $(REPLAY_OUT) $(REPLAY_ARGS)

# Every CUDA case under compute-sanitizer's memcheck, initcheck and racecheck (a GPU machine; elsewhere
# every case is SKIP with the reason). Findings are part of each case's outcome: fixes must be clean,
# memory-bug variants flagged by the tool they name.
SANITIZE_SEEDS ?= 2
SANITIZE_TOOLS ?= memcheck initcheck racecheck
sanitize: $(LAB_BIN)
	@rc=0; for t in $(SANITIZE_TOOLS); do \
	  echo "== compute-sanitizer $$t"; \
	  $(LAB_BIN) replay --backend cuda --sanitize $$t --seeds $(SANITIZE_SEEDS) --no-plots --quiet \
	    --out $(BUILD)/sanitize-$$t $(REPLAY_ARGS) || rc=1; \
	done; exit $$rc

bench: $(LAB_BIN)
	$(LAB_BIN) bench

# The GPU at hand's baseline, baselines/<gpu>/ (report.json + README.md): `lab report --backend cuda --seeds 1000` with
# its bench, by this build (tools/gpu/baseline.py; BASELINE_ARGS=--gpu NAME names the folder). Remade when the kernels
# or incidents change: lab compare says so from the sources digest the report records.
BASELINE_ARGS ?=
baselines: $(LAB_BIN)
	python3 tools/gpu/baseline.py --lab $(LAB_BIN) $(BASELINE_ARGS)

# Planted regressions (tools/dev/mutants.py), one at a time in a scratch copy outside the tree (incremental builds
# there, CUDA off): which the replay kills, which only the unit tests, which survive. Not part of `make test`
# (minutes); `make test` checks that every mutant still applies (tests/python/test_mutants.py).
MUTANTS_ARGS ?=
mutants: | $(DEPS_OK)
	python3 tools/dev/mutants.py $(MUTANTS_ARGS)

# The standalone studies (studies/*/Makefile), outside the lab's build: each builds into build/study.
studies:
	@for d in studies/*/; do $(MAKE) -C "$$d" || exit 1; done

golden: $(LAB_BIN)
	$(LAB_BIN) golden bless

golden-check: $(LAB_BIN)
	$(LAB_BIN) golden verify

plots: $(LAB_BIN)
	$(LAB_BIN) plots --out $(REPLAY_OUT)

help:
	@echo "make              build $(LAB_BIN) (installs missing Debian packages first)"
	@echo "make test         build and run the Criterion test suite (TEST_ARGS=... passes flags)"
	@echo "make test-slurm   the lab on a one-node Slurm cluster of its own (installs slurmctld, slurmd, munge)"
	@echo "make replay       replay every incident (SEEDS=N overrides the defaults) on BACKEND=auto|cpu|cuda, into $(REPLAY_OUT)"
	@echo "make sanitize     every CUDA case under compute-sanitizer (SANITIZE_TOOLS=$(SANITIZE_TOOLS), SANITIZE_SEEDS=$(SANITIZE_SEEDS))"
	@echo "make bench        the incidents' GPU benchmarks, as ratios against the device's ceilings"
	@echo "make baselines    remake baselines/<gpu>/ on the GPU at hand (lab report --backend cuda --seeds 1000, with the bench)"
	@echo "make golden       regenerate every incident's golden tensors from the float64 reference"
	@echo "make golden-check verify every golden against its MANIFEST (sha256, dtype, shape)"
	@echo "make plots        redraw the plots of the last replay in $(REPLAY_OUT)/plots"
	@echo "make stories      rewrite the incidents' READMEs' generated numbers from CPU replays (make test checks them)"
	@echo "make mutants      planted regressions in a scratch copy: which the replay and the tests kill (MUTANTS_ARGS=...)"
	@echo "make studies      build the standalone studies of studies/ (nvcc), outside the lab's build"
	@echo "make layering-check  prove that no include runs up the layers (lab < kernels < incidents < replay's wings)"
	@echo "make fuzz         run the libFuzzer targets (npy, manifest) for FUZZ_SECONDS=$(FUZZ_SECONDS) s each"
	@echo "make test SANITIZE=address,undefined   the same tests under sanitizers (build in build/san-*)"
	@echo "CUDA=0 disables the CUDA parts (build in build/nocuda). GPU architectures: the GPUs nvidia-smi lists, else the fat"
	@echo "                  binary (SASS sm_75..sm_120 + newest PTX); CUDA_ARCH=sm_80 (or \"sm_80 sm_90\", compute_80) chooses."
	@echo "                  This build: $(if $(filter 1,$(CUDA)),$(CUDA_ARCHS),no CUDA)"

clean:
	rm -rf build
