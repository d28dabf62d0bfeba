# mk/fuzz.mk: libFuzzer targets for the lab's input surface (.npy reader, golden MANIFEST reader).
# `make fuzz` builds them with clang -fsanitize=fuzzer,address and runs each for FUZZ_SECONDS on a
# copy of the seed corpus (fuzz/corpus/<target>, real goldens among them); crashes land in build/fuzz.

.PHONY: fuzz
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_TARGETS := npy manifest
FUZZ_LIB_SRCS := lab/lab_err.c lab/lab_fs.c lab/lab_tensor.c lab/lab_golden.c
FUZZ_BINS    := $(FUZZ_TARGETS:%=build/fuzz/fuzz_%)

build/fuzz/fuzz_%: fuzz/fuzz_%.c $(FUZZ_LIB_SRCS)
	@mk/deps.sh --fuzz
	@mkdir -p $(@D)
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -Ilab $$(pkg-config --cflags libcjson libcrypto) \
	    $^ -o $@ $$(pkg-config --libs libcjson libcrypto)

fuzz: $(FUZZ_BINS)
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p build/fuzz/corpus-$$t build/fuzz/artifacts-$$t; \
	  cp -n fuzz/corpus/$$t/* build/fuzz/corpus-$$t/ 2>/dev/null; \
	  echo "fuzz_$$t: $(FUZZ_SECONDS) s"; \
	  build/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1 \
	    -artifact_prefix=build/fuzz/artifacts-$$t/ build/fuzz/corpus-$$t 2>&1 | \
	    grep -E 'stat::number_of_executed_units|stat::new_units_added|ERROR|SUMMARY' || exit 1; \
	done
