#include "protocol/messages.h"

namespace tensortier {
namespace {

const char* NameOf(const RegisterMsg&) { return "register"; }
const char* NameOf(const RegisterAckMsg&) { return "register_ack"; }
const char* NameOf(const HeartbeatMsg&) { return "heartbeat"; }
const char* NameOf(const TaskMsg&) { return "task"; }
const char* NameOf(const WeightsMsg&) { return "weights"; }
const char* NameOf(const TransitionBatchMsg&) { return "transitions"; }
const char* NameOf(const EpisodeReportMsg&) { return "episode_report"; }
const char* NameOf(const ErrorMsg&) { return "error"; }
const char* NameOf(const ShutdownMsg&) { return "shutdown"; }
const char* NameOf(const MeasurementCacheMsg&) { return "measurements"; }

}  // namespace

const char* MessageName(const Message& m) {
  return std::visit([](const auto& body) { return NameOf(body); }, m);
}

}  // namespace tensortier
