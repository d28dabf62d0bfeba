# Incident 0008: the semi-CRF Triton backward at num_warps > 2: a replicated [64] vector stored by one replica, loaded by all, no barrier.
$(eval $(call lab_incident,0008-semicrf-warp-replica-race))
