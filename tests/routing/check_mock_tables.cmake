# Regenerates the mock's tables from the toolkit and compares them with the committed ones.
file(MAKE_DIRECTORY ${OUT})
execute_process(COMMAND ${PYTHON} ${SRC}/gen_tables.py ${CUDA_ROOT} ${OUT} RESULT_VARIABLE rc
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  # A toolkit packaged with graphics-interop exports (GL, EGL, VDPAU) is not the one the tables
  # were made from: the comparison means nothing there. Anything else is a real failure.
  if(err MATCHES "exports no query resolves to: cuEGL")
    message("graphmem-skip: ${CUDA_ROOT} is not the toolkit the mock's tables come from")
    return()
  endif()
  message(FATAL_ERROR "gen_tables.py failed: ${err}")
endif()
foreach(f mock_symbols.def mock_procs.def)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${SRC}/${f} ${OUT}/${f} RESULT_VARIABLE diff)
  if(NOT diff EQUAL 0)
    message(FATAL_ERROR "${f} is stale for ${CUDA_ROOT}: rerun tests/routing/mock/gen_tables.py")
  endif()
endforeach()
