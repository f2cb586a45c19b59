# Writes one generated file: runs `sandshim ARGS...` (a hidden --generate-* flag) into OUTPUT,
# gzipped with -9n (reproducible, as Debian wants man pages) when OUTPUT ends in .gz.
# cmake -DSANDSHIM=... -DARGS=a:b -DOUTPUT=... [-DGZIP=...] -P generate.cmake
string(REPLACE ":" ";" ARGS "${ARGS}")
string(REGEX REPLACE "\\.gz$" "" plain "${OUTPUT}")
execute_process(COMMAND "${SANDSHIM}" ${ARGS} OUTPUT_FILE "${plain}.tmp" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "sandshim: `sandshim ${ARGS}` failed (${rc}); nothing was generated")
endif()
file(RENAME "${plain}.tmp" "${plain}")
if(NOT plain STREQUAL OUTPUT)
  execute_process(COMMAND "${GZIP}" -9nf "${plain}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "sandshim: gzip ${plain} failed (${rc})")
  endif()
endif()
