# Incident 0006: distillation step-counter hang (real ranks on Open MPI, watchdog, collective trace).
$(eval $(call lab_incident,0006-distill-step-hang))

# The MPI program has its own main(), so it lives in mpi/ (out of the lab's glob) and is built here with
# mpicc into build/; the lab and the tests find it by the path compiled into dsh.c. mpicc is named in the
# recipe, not looked up when the Makefile is read: the deps step (mk/deps.sh, an order-only prerequisite)
# installs Open MPI first, so the very first `make` on a fresh machine builds the job too. A lab without
# the job reports its cases as SKIP "missing", which fails the replay. Order-only: not linked in.
DSH_DIR    := $(LAB_INCIDENT_DIR)
DSH_JOB    := $(BUILD)/$(DSH_DIR)/distill_job
DSH_MPICC  ?= mpicc
$(DSH_JOB): $(DSH_DIR)/mpi/distill_job.c $(DSH_DIR)/dsh_proto.c $(DSH_DIR)/dsh_proto.h $(DSH_DIR)/dsh_trace.c $(DSH_DIR)/dsh_trace.h lab/lab_err.c lab/lab_err.h lab/lab_rng.h $(LAB_CUDA_ARCH_STAMP) | $(BUILD)/.deps-ok
	@mkdir -p $(@D)
	$(DSH_MPICC) -std=gnu11 -O2 -g -Wall -Wextra -Wno-format-truncation -Ilab -I$(DSH_DIR) $(filter %.c,$^) -o $@ -lm
all: $(DSH_JOB)
$(BUILD)/lab $(BUILD)/lab-tests: | $(DSH_JOB)
$(BUILD)/obj/$(DSH_DIR)/dsh.o: CFLAGS += -DDSH_JOB_BIN='"$(DSH_JOB)"'

# The same protocol over NCCL (one process per GPU), where nvcc and NCCL exist: build/.../distill_nccl.
# Cases on the CUDA backend run it; with fewer than 2 GPUs they SKIP saying so.
DSH_NCCL   := $(BUILD)/$(DSH_DIR)/distill_nccl
ifeq ($(CUDA),1)
ifneq ($(wildcard $(CUDA_HOME)/include/nccl.h),)
$(DSH_NCCL): $(DSH_DIR)/mpi/distill_nccl.cu $(DSH_DIR)/dsh_proto.c $(DSH_DIR)/dsh_proto.h $(DSH_DIR)/dsh_trace.c $(DSH_DIR)/dsh_trace.h lab/lab_err.c lab/lab_err.h lab/lab_rng.h $(LAB_CUDA_ARCH_STAMP) | $(BUILD)/.deps-ok
	@mkdir -p $(@D)
	$(NVCC) -O2 $(CUDA_GENCODE) -Ilab -I$(DSH_DIR) $$(pkg-config --cflags ompi-c) $(filter %.c %.cu,$^) -o $@ \
	    $$(pkg-config --libs ompi-c) -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/lib -lnccl -lcudart
all: $(DSH_NCCL)
$(BUILD)/lab $(BUILD)/lab-tests: | $(DSH_NCCL)
endif
endif
$(BUILD)/obj/$(DSH_DIR)/dsh.o: CFLAGS += -DDSH_NCCL_BIN='"$(DSH_NCCL)"'
