#include "daemon/common/logging.h"

#include <cstdlib>
#include <memory>
#include <string>

#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/sinks/systemd_sink.h"
#include "spdlog/spdlog.h"

namespace neuron::rtd {

void InitLogging(std::string_view level) {
  std::shared_ptr<spdlog::logger> logger;
  // systemd sets JOURNAL_STREAM when stderr goes to the journal.
  if (std::getenv("JOURNAL_STREAM") != nullptr) {
    logger = std::make_shared<spdlog::logger>("neuron-rtd",
                                              std::make_shared<spdlog::sinks::systemd_sink_mt>());
    logger->set_pattern("%v");
  } else {
    logger = std::make_shared<spdlog::logger>("neuron-rtd",
                                              std::make_shared<spdlog::sinks::stderr_sink_mt>());
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e neuron-rtd[%P] %l: %v");
  }
  logger->set_level(spdlog::level::from_str(std::string(level)));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace neuron::rtd
