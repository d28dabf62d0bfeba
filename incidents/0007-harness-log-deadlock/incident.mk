# Incident 0007: the test harness that deadlocked on its own logging (real worker process, pipe + socketpair).
$(eval $(call lab_incident,0007-harness-log-deadlock))

# The worker is a program of its own (its own main()), so it lives in worker/ (out of the lab's glob) and is
# built here into build/; the lab and the tests exec it by the path compiled into hld.c. It is built by the
# first `make` (a prerequisite of `all` and, order-only, of both binaries), in every build flavour.
HLD_DIR    := $(LAB_INCIDENT_DIR)
HLD_WORKER := $(BUILD)/$(HLD_DIR)/hld_worker
$(HLD_WORKER): $(HLD_DIR)/worker/hld_worker.c $(HLD_DIR)/hld_proto.h lab/lab_rng.h lab/lab_hd.h | $(BUILD)/.deps-ok
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_BASE) -I$(HLD_DIR) $< -o $@ $(LDFLAGS_SAN)
all: $(HLD_WORKER)
$(BUILD)/lab $(BUILD)/lab-tests: | $(HLD_WORKER)
$(BUILD)/obj/$(HLD_DIR)/hld.o: CFLAGS += -DHLD_WORKER_BIN='"$(HLD_WORKER)"'
