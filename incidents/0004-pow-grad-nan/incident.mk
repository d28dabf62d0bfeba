# Incident 0004: pow() gradient NaN for negative bases (exp/log lowering of a runtime-exponent pow).
$(eval $(call lab_incident,0004-pow-grad-nan))
