# Incident 0003: NVFP4 block-scale-factor layout (remap size vs cosize, M/K swapped in the coordinate extraction).
$(eval $(call lab_incident,0003-nvfp4-sf-layout))
