# The incident lab: non-recursive build. Fragments live in mk/; every incidents/*/incident.mk is
# included by wildcard, so adding an incident edits nothing outside its directory. `make help` lists
# the targets.

.DEFAULT_GOAL := all
include mk/config.mk
include mk/incident.mk

LAB_SRCS          := $(wildcard lab/*.c)
KERNEL_C_SRCS     := $(wildcard kernels/*.c)
KERNEL_CU_SRCS    := $(wildcard kernels/*.cu)
# replay/ in wings (mk/config.mk: each wing sees itself and the wings below it). The MPI modules
# (replay/scaleout/lab_mpi*.c) and lab_main.c go into build/lab only (mk/targets.mk).
REPLAY_WINGS      := cli scaleout engine report gpu
LAB_MPI_SRCS      := $(wildcard replay/scaleout/lab_mpi.c replay/scaleout/lab_mpi_*.c)
REPLAY_SRCS       := $(filter-out replay/cli/lab_main.c $(LAB_MPI_SRCS),$(foreach w,$(REPLAY_WINGS),$(wildcard replay/$(w)/*.c)))
LAB_TEST_SRCS     := $(wildcard tests/test_*.c)
LAB_INCIDENT_IDS  :=
LAB_INC_C_SRCS    :=
LAB_INC_CU_SRCS   :=
include $(sort $(wildcard incidents/*/incident.mk))

C_SRCS  := $(LAB_SRCS) $(KERNEL_C_SRCS) $(LAB_INC_C_SRCS) $(REPLAY_SRCS)
CU_SRCS := $(if $(filter 1,$(CUDA)),$(KERNEL_CU_SRCS) $(LAB_INC_CU_SRCS))
OBJS    := $(C_SRCS:%.c=$(BUILD)/obj/%.o) $(CU_SRCS:%.cu=$(BUILD)/obj/%.cu.o)
TEST_OBJS := $(LAB_TEST_SRCS:%.c=$(BUILD)/obj/%.o)
LAB_MPI_OBJS := $(LAB_MPI_SRCS:%.c=$(BUILD)/obj/%.o)

LAB_BIN   := $(BUILD)/lab
TEST_BIN  := $(BUILD)/lab-tests
DEPS_OK   := $(BUILD)/.deps-ok

include mk/targets.mk
include mk/fuzz.mk
include mk/buildinfo.mk

-include $(OBJS:.o=.d) $(TEST_OBJS:.o=.d) $(BUILD)/obj/replay/cli/lab_main.d $(LAB_MPI_OBJS:.o=.d)
