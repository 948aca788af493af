// neuron-rtd-exporter: serves neuron-rtd's counters to Prometheus at
// /metrics, polling the daemon over its Unix socket at each scrape (the
// daemon itself stays Unix-socket only). docs/operations.md.
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "client/exporter/exporter.h"
#include "client/exporter/exporter_config.h"
#include "httplib.h"
#include "neuron/version.h"

namespace {

constexpr char kExpositionType[] = "text/plain; version=0.0.4; charset=utf-8";

int Fail(const absl::Status& status) {
  std::cerr << "neuron-rtd-exporter: " << status.message() << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"neuron-rtd-exporter: neuron-rtd's metrics for Prometheus"};
  std::string config_path;
  std::string address;
  std::string listen;
  bool compat = false;
  bool per_session = false;
  std::vector<std::string> labels;
  std::string pod_resources_socket;
  std::string resource_name;
  std::string device_resource_name;
  app.add_option("--config", config_path, "TOML file with an [exporter] table");
  app.add_option("--address", address,
                 "the daemon, unix:PATH (default: $NEURON_RTD_ADDRESS, then the default socket)");
  app.add_option("--listen", listen, "HOST:PORT to serve on (default 127.0.0.1:9482; port 0: any)");
  app.add_flag("--neuron-monitor-compat", compat,
               "also serve the families of AWS's neuron-monitor exporter, by its names");
  app.add_flag("--per-session-metrics", per_session,
               "also serve series per session (one set of series per session)");
  app.add_option("--label", labels, "NAME=VALUE added to every series (repeatable)");
  app.add_option("--pod-resources-socket", pod_resources_socket,
                 "the kubelet's pod-resources socket: label per-core series with the pod, "
                 "namespace and container holding the core (e.g. "
                 "/var/lib/kubelet/pod-resources/kubelet.sock)");
  app.add_option("--resource-name", resource_name,
                 "the device plugin's resource of cores (default aws.amazon.com/neuroncore)");
  app.add_option("--device-resource-name", device_resource_name,
                 "the device plugin's resource of whole devices, if it serves one (e.g. "
                 "aws.amazon.com/neuron)");
  app.set_version_flag("--version", std::string("neuron-rtd-exporter ") + NEURON_RTD_VERSION);
  CLI11_PARSE(app, argc, argv);

  neuron_exporter::ExporterOptions options;
  if (!config_path.empty()) {
    absl::StatusOr<neuron_exporter::ExporterOptions> loaded =
        neuron_exporter::LoadExporterConfig(config_path, options);
    if (!loaded.ok()) return Fail(loaded.status());
    options = *std::move(loaded);
  }
  if (!address.empty()) options.address = address;
  if (!listen.empty()) options.listen = listen;
  if (!pod_resources_socket.empty()) options.pod_resources_socket = pod_resources_socket;
  if (!resource_name.empty()) options.resource_name = resource_name;
  if (!device_resource_name.empty()) options.device_resource_name = device_resource_name;
  options.neuron_monitor_compat |= compat;
  options.per_session |= per_session;
  for (const std::string& label : labels) {
    if (absl::Status added = neuron_exporter::AddConstantLabel(label, options.labels);
        !added.ok()) {
      return Fail(added);
    }
  }
  absl::StatusOr<neuron_exporter::ListenAddress> where =
      neuron_exporter::ParseListenAddress(options.listen);
  if (!where.ok()) return Fail(where.status());

  // SIGTERM and SIGINT end the server from a thread of their own; blocked
  // here, before any thread starts, so that none of them takes the signal.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  neuron_exporter::Exporter exporter(options);
  httplib::Server server;
  server.new_task_queue = [] { return new httplib::ThreadPool(4); };
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a
  // second exporter on the same port binds too and takes half the scrapes.
  server.set_socket_options([](socket_t socket) {
    const int yes = 1;
    setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& response) {
    response.set_content(exporter.Scrape(), kExpositionType);
  });
  server.Get("/healthz", [&](const httplib::Request&, httplib::Response& response) {
    const absl::Status health = exporter.Health();
    response.status = health.ok() ? 200 : 503;
    response.set_content(health.ok() ? "ok\n" : std::string(health.message()) + "\n",
                         "text/plain; charset=utf-8");
  });
  server.Get("/", [](const httplib::Request&, httplib::Response& response) {
    response.set_content(
        "<html><head><title>neuron-rtd-exporter</title></head><body>"
        "<h1>neuron-rtd-exporter</h1><p><a href=\"/metrics\">Metrics</a> &middot; "
        "<a href=\"/healthz\">Health</a></p></body></html>\n",
        "text/html; charset=utf-8");
  });
  int port = where->port;
  if (port == 0) {
    port = server.bind_to_any_port(where->host);
  } else if (!server.bind_to_port(where->host, port)) {
    port = -1;
  }
  if (port < 0) {
    return Fail(absl::UnavailableError(absl::StrFormat(
        "cannot listen on %s (in use, or not an address of this host)", options.listen)));
  }
  std::cout << "neuron-rtd-exporter: serving http://"
            << (where->host.find(':') != std::string::npos ? "[" + where->host + "]"
                                                            : where->host)
            << ":" << port << "/metrics" << std::endl;
  // Bound: connections queue from here on (systemd's Type=notify).
  sd_notify(0, "READY=1");

  std::atomic<bool> finished{false};
  std::thread stopper([&server, &finished, stop_signals] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    // httplib's stop() does nothing until listen_after_bind() runs: a
    // SIGTERM just after start-up was lost and the exporter served on.
    while (!finished.load() && !server.is_running()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    server.stop();
  });
  const bool served = server.listen_after_bind();
  finished.store(true);
  // The server stopped by itself (not by a signal): wake the stopper.
  if (!served) kill(getpid(), SIGTERM);
  stopper.join();
  return served ? 0 : 1;
}
