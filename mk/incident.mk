# mk/incident.mk: the rule template an incident's incident.mk calls:
#   $(eval $(call lab_incident,NNNN-slug))
# It adds the directory's C sources (test_*.c go to the test binary), its CUDA sources (*.cu, built
# where nvcc exists) and its id to the build. Nothing outside the incident directory changes.
# The id is written here once: every file of the directory is compiled with LAB_INCIDENT_ID, the id as a
# C string ("NNNN-slug"), and the incident.mk may go on using $(LAB_INCIDENT_DIR) (incidents/NNNN-slug)
# for rules of its own.

define lab_incident
LAB_INCIDENT_IDS  += $(1)
LAB_INCIDENT_DIR  := incidents/$(1)
LAB_INC_C_SRCS    += $$(filter-out incidents/$(1)/test_%.c,$$(wildcard incidents/$(1)/*.c))
LAB_INC_CU_SRCS   += $$(wildcard incidents/$(1)/*.cu)
LAB_TEST_SRCS     += $$(wildcard incidents/$(1)/test_*.c)
$(BUILD)/obj/incidents/$(1)/%: LAB_INCIDENT_DEF := -DLAB_INCIDENT_ID='"$(1)"'
endef
