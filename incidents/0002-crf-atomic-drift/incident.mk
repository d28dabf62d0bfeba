# Incident 0002: semi-Markov CRF backward: float32 atomic accumulation in a schedule-dependent order (run-to-run drift).
$(eval $(call lab_incident,0002-crf-atomic-drift))
