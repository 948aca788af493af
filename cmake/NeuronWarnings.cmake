# Warning flags for the project's own targets (not for generated code).
# -Wmissing-field-initializers is off: designated initializers that leave
# members at their declared defaults are the intended style.
function(neuron_target_warnings target)
  target_compile_options(${target} PRIVATE
      -Wall -Wextra -Wshadow -Wimplicit-fallthrough -Wno-missing-field-initializers
      $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>)
  if(NEURON_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
