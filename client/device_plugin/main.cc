// neuron-rtd-device-plugin: hands the host's NeuronCores to Kubernetes pods
// as grants of neuron-rtd (docs/operations.md, "Kubernetes").
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <thread>

#include "CLI/CLI.hpp"
#include "client/device_plugin/plugin_runner.h"
#include "neuron/version.h"
#include "neuronrt/client.h"

int main(int argc, char** argv) {
  CLI::App app{"neuron-rtd-device-plugin: NeuronCores for Kubernetes pods, served by neuron-rtd"};
  std::string address;
  neuron_device_plugin::PluginOptions options;
  std::string core_resource = neuron_k8s::kDefaultCoreResourceName;
  std::string core_endpoint = "neuron-rtd-neuroncore.sock";
  std::string device_resource;
  std::string device_endpoint = "neuron-rtd-neuron.sock";
  int64_t poll_interval_ms = 5000;
  int64_t gc_grace_ms = 60000;
  app.add_option("--address", address,
                 "neuron-rtd's own socket, unix:PATH (default: $NEURON_RTD_ADDRESS, then the "
                 "system socket)");
  app.add_option("--kubelet-dir", options.kubelet_dir, "the kubelet's device-plugin directory")
      ->capture_default_str();
  app.add_option("--resource-name", core_resource,
                 "the extended resource of NeuronCores, one device per core (empty: none)")
      ->capture_default_str();
  app.add_option("--endpoint", core_endpoint, "its socket name in the kubelet's directory")
      ->capture_default_str();
  app.add_option("--device-resource-name", device_resource,
                 "the extended resource of whole Neuron devices, e.g. aws.amazon.com/neuron "
                 "(empty: none)")
      ->capture_default_str();
  app.add_option("--device-endpoint", device_endpoint,
                 "its socket name in the kubelet's directory")
      ->capture_default_str();
  app.add_option("--pod-resources-socket", options.pod_resources_socket,
                 "the kubelet's pod-resources socket (empty: grants are never deleted)")
      ->capture_default_str();
  app.add_option("--container-path", options.service.container_path,
                 "where a grant's directory is mounted in containers")
      ->capture_default_str();
  app.add_option("--poll-interval-ms", poll_interval_ms,
                 "how often health, registration and unused grants are checked")
      ->check(CLI::Range(int64_t{10}, int64_t{600000}))
      ->capture_default_str();
  app.add_option("--gc-grace-ms", gc_grace_ms,
                 "an unused grant younger than this is kept (Allocate precedes the pod's listing)")
      ->check(CLI::Range(int64_t{0}, int64_t{86400000}))
      ->capture_default_str();
  app.set_version_flag("--version", std::string("neuron-rtd-device-plugin ") + NEURON_RTD_VERSION);
  CLI11_PARSE(app, argc, argv);
  options.poll_interval = absl::Milliseconds(poll_interval_ms);
  options.gc_grace = absl::Milliseconds(gc_grace_ms);
  options.resources.clear();
  if (!core_resource.empty()) {
    options.resources.push_back(
        {.resource = {.name = core_resource, .unit = neuron_k8s::Unit::kCore},
         .endpoint = core_endpoint});
  }
  if (!device_resource.empty()) {
    options.resources.push_back(
        {.resource = {.name = device_resource, .unit = neuron_k8s::Unit::kDevice},
         .endpoint = device_endpoint});
  }
  if (absl::Status valid = neuron_device_plugin::ValidatePluginOptions(options); !valid.ok()) {
    std::cerr << "neuron-rtd-device-plugin: " << valid.message() << "\n";
    return 2;
  }

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  absl::StatusOr<std::unique_ptr<neuronrt::Client>> daemon =
      neuronrt::Client::Connect({.address = address});
  if (!daemon.ok()) {
    std::cerr << "neuron-rtd-device-plugin: " << daemon.status().message() << "\n";
    return 2;
  }
  neuron_device_plugin::PluginRunner runner(**daemon, options);
  std::thread stopper([&runner, stop_signals] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    runner.RequestStop();
  });
  absl::Status ran = runner.Run();
  if (!ran.ok()) {
    std::cerr << "neuron-rtd-device-plugin: " << ran.message() << "\n";
    kill(getpid(), SIGTERM);
  }
  stopper.join();
  return ran.ok() ? 0 : 1;
}
