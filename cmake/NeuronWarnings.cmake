# Warning flags for the project's own targets (not for generated code).
function(neuron_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wnon-virtual-dtor
                                           -Wimplicit-fallthrough)
  if(NEURON_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
