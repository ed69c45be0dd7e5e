# SPDX-License-Identifier: MIT OR Apache-2.0
# One rlx_ladder test (tools/CMakeLists.txt): runs PROGRAM (through EMULATOR
# when set) with ARGS ("|"-separated) and INPUT on its stdin, and fails
# unless it exits with CODE and its stdout + stderr match REGEX.
file(MAKE_DIRECTORY "${WORK}")
string(REPLACE "|" ";" args "${ARGS}")
file(WRITE "${WORK}/stdin.txt" "${INPUT}")
execute_process(
  COMMAND ${EMULATOR} "${PROGRAM}" ${args}
  INPUT_FILE "${WORK}/stdin.txt"
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE code)
set(all "${out}${err}")
if(NOT code STREQUAL "${CODE}")
  message(FATAL_ERROR "exit status ${code}, expected ${CODE}; output:\n${all}")
endif()
if(NOT all MATCHES "${REGEX}")
  message(FATAL_ERROR "output does not match '${REGEX}':\n${all}")
endif()
message(STATUS "exit status ${code}; output:\n${all}")
