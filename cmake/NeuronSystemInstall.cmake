# A system install (`cmake --install`, the Debian packages of debian/): the
# programs in bin, the daemon's private files in lib/neuron-rtd (where it
# looks for them from bin: the sim plugin, the compiler worker), the
# configuration in /etc/neuron-rtd. systemd units and sysusers come from
# deploy/systemd/ through debian/ (dh_installsystemd, dh_installsysusers).
# The wheel's layout is torch_plugin/CMakeLists.txt's; build one or the
# other.
include(GNUInstallDirs)

install(TARGETS neuron-rtd neuronctl neuron-rtd-device-plugin
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
if(TARGET neuron-rtd-exporter)
  install(TARGETS neuron-rtd-exporter RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
endif()

set(NEURON_PRIVATE_DIR "lib/neuron-rtd")
install(TARGETS neuron_rtd_sim_plugin LIBRARY DESTINATION "${NEURON_PRIVATE_DIR}")
install(FILES "${CMAKE_BINARY_DIR}/lib/neuron-rtd/neuron_compile_worker.py"
        DESTINATION "${NEURON_PRIVATE_DIR}")

# The plugin's libtorch, from the torch it was built against: Debian's
# libtorch is far older than the version the plugin needs. Off: the plugin
# finds libtorch on the library path (an operator's own install).
option(NEURON_BUNDLE_LIBTORCH "Install libtorch_cpu, libc10 and libgomp beside the sim plugin" ON)
if(NEURON_BUNDLE_LIBTORCH)
  install(FILES "${NEURON_TORCH_LIB_DIR}/libtorch_cpu.so" "${NEURON_TORCH_LIB_DIR}/libc10.so"
                "${NEURON_TORCH_LIB_DIR}/libgomp.so.1"
          DESTINATION "${NEURON_PRIVATE_DIR}/torch")
  set_target_properties(neuron_rtd_sim_plugin PROPERTIES INSTALL_RPATH "$ORIGIN/torch")
endif()

install(FILES "${PROJECT_SOURCE_DIR}/deploy/neuron-rtd.toml"
        DESTINATION "${CMAKE_INSTALL_FULL_SYSCONFDIR}/neuron-rtd")
if(TARGET neuron-rtd-exporter)
  install(FILES "${PROJECT_SOURCE_DIR}/deploy/neuron-rtd-exporter.toml"
          DESTINATION "${CMAKE_INSTALL_FULL_SYSCONFDIR}/neuron-rtd" RENAME exporter.toml)
endif()
