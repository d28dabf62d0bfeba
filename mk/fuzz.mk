# mk/fuzz.mk: libFuzzer targets for the lab's input surface (.npy reader, golden MANIFEST reader, command-line parser).
# `make fuzz` builds them with clang -fsanitize=fuzzer,address,undefined and runs each for FUZZ_SECONDS
# on a copy of the seed corpus (fuzz/corpus/<target>, real goldens among them). Each target's output
# goes to build/fuzz/fuzz_<target>.log; its executed-units count is printed. A finding (crash, leak,
# sanitizer report, timeout) stops `make fuzz` with a non-zero status, the reproducer in
# build/fuzz/artifacts-<target>/.

.PHONY: fuzz
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_TARGETS := npy manifest args
FUZZ_LIB_SRCS := lab/lab_err.c lab/lab_fs.c lab/lab_json.c lab/lab_tensor.c lab/lab_golden.c replay/cli/lab_cli.c
FUZZ_LIB_HDRS := lab/lab_err.h lab/lab_fs.h lab/lab_json.h lab/lab_tensor.h lab/lab_golden.h replay/cli/lab_cli.h replay/engine/lab_request.h
FUZZ_BINS    := $(FUZZ_TARGETS:%=build/fuzz/fuzz_%)

# -fno-sanitize-recover=all: an UBSan report aborts the run, so it counts as a finding.
build/fuzz/fuzz_%: fuzz/fuzz_%.c $(FUZZ_LIB_SRCS) $(FUZZ_LIB_HDRS)
	@mk/deps.sh --fuzz
	@mkdir -p $(@D)
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Ilab -Ireplay/cli -Ireplay/engine \
	    $$(pkg-config --cflags libcjson libcrypto) $(filter %.c,$^) -o $@ $$(pkg-config --libs libcjson libcrypto)

# The fuzzer's status is taken directly (not through a pipe, whose status would be grep's).
fuzz: $(FUZZ_BINS)
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p build/fuzz/corpus-$$t build/fuzz/artifacts-$$t; \
	  cp -n fuzz/corpus/$$t/* build/fuzz/corpus-$$t/ 2>/dev/null; \
	  log=build/fuzz/fuzz_$$t.log; \
	  echo "fuzz_$$t: $(FUZZ_SECONDS) s, log $$log"; \
	  build/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1 \
	    -artifact_prefix=build/fuzz/artifacts-$$t/ build/fuzz/corpus-$$t >$$log 2>&1; \
	  rc=$$?; \
	  grep -E 'stat::number_of_executed_units|stat::new_units_added' $$log | sed "s/^/fuzz_$$t: /"; \
	  if [ $$rc -ne 0 ]; then \
	    grep -E -A24 '==ERROR|runtime error|SUMMARY|Test unit written|ALARM|out-of-memory' $$log | head -80; \
	    echo "fuzz_$$t: FINDING (exit $$rc): reproducer in build/fuzz/artifacts-$$t/, full log $$log" >&2; \
	    exit 1; \
	  fi; \
	  grep -q 'stat::number_of_executed_units' $$log || \
	    { echo "fuzz_$$t: no final stats in $$log" >&2; exit 1; }; \
	done
