# Incident 0001: semi-Markov CRF backward: padding lanes' atomics out of bounds (gradient buffers sized C, C_PAD lanes).
$(eval $(call lab_incident,0001-crf-oob-atomics))
