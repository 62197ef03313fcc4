# Merges static archives into one with `ar -M` (MRI script in MRI); run by
# the tt_hostrt_torch_bundle target as `cmake -DAR=... -DMRI=... -P`.
execute_process(COMMAND ${AR} -M INPUT_FILE ${MRI} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ar -M ${MRI} failed (${rc}): ${err}")
endif()
