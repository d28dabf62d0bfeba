# mk/buildinfo.mk: the facts of this build (git commit and whether the tree was dirty, compilers and
# their versions, flags, the GPU architectures carried, the digest of kernels/ and incidents/) as a generated header,
# $(BUILD)/gen/lab_buildinfo.h, that replay/gpu/lab_device.c and lab_arch.c
# compile in. The header is regenerated on every make but replaced only when its contents change, so
# an unchanged tree neither recompiles nor relinks.
LAB_BUILDINFO_H := $(BUILD)/gen/lab_buildinfo.h

.PHONY: lab-buildinfo-force
lab-buildinfo-force:

$(LAB_BUILDINFO_H): export LAB_BI_CC := $(CC)
$(LAB_BUILDINFO_H): export LAB_BI_CFLAGS := $(CFLAGS)
$(LAB_BUILDINFO_H): export LAB_BI_CUDA := $(CUDA)
$(LAB_BUILDINFO_H): export LAB_BI_NVCC := $(NVCC)
$(LAB_BUILDINFO_H): export LAB_BI_NVCCFLAGS := $(NVCCFLAGS)
$(LAB_BUILDINFO_H): export LAB_BI_CUDA_ARCH := $(CUDA_ARCHS)
$(LAB_BUILDINFO_H): lab-buildinfo-force
	@mkdir -p $(@D)
	@mk/buildinfo.sh > $@.tmp.$$$$ && { cmp -s $@.tmp.$$$$ $@ || mv $@.tmp.$$$$ $@; }; rm -f $@.tmp.$$$$

$(BUILD)/obj/replay/gpu/lab_device.o: $(LAB_BUILDINFO_H)
$(BUILD)/obj/replay/gpu/lab_device.o: CFLAGS += -I$(BUILD)/gen
# lab_arch.c reads the architectures carried and the toolkit's version from it too
$(BUILD)/obj/replay/gpu/lab_arch.o: $(LAB_BUILDINFO_H)
$(BUILD)/obj/replay/gpu/lab_arch.o: CFLAGS += -I$(BUILD)/gen
