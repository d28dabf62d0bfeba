# Incident 0005: a BIO linear-chain CRF trained in bf16 goes NaN; the CRF in float32 does not.
$(eval $(call lab_incident,0005-bf16-crf-nan))
