#include "protocol/messages.h"

#include <algorithm>
#include <stdexcept>

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

std::vector<TransitionBatchMsg> SplitIntoChunks(TransitionBatchMsg batch, size_t per_batch) {
  if (per_batch == 0) throw std::invalid_argument("SplitIntoChunks: per_batch must be positive");
  const size_t n = batch.transitions.size();
  const size_t count = std::max<size_t>(1, (n + per_batch - 1) / per_batch);
  if (count > kMaxBatchChunks)
    throw std::invalid_argument("an episode of " + std::to_string(n) + " transitions needs more than " +
                                std::to_string(kMaxBatchChunks) + " batches");
  std::vector<TransitionBatchMsg> chunks;
  if (count == 1) {
    batch.chunk_index = 0;
    batch.chunk_count = 1;
    chunks.push_back(std::move(batch));
    return chunks;
  }
  chunks.reserve(count);
  for (size_t c = 0; c < count; ++c) {
    TransitionBatchMsg chunk;
    chunk.worker_id = batch.worker_id;
    chunk.task_id = batch.task_id;
    chunk.episode_id = batch.episode_id;
    chunk.policy_version = batch.policy_version;
    chunk.chunk_index = static_cast<uint32_t>(c);
    chunk.chunk_count = static_cast<uint32_t>(count);
    const size_t begin = c * per_batch, end = std::min(n, begin + per_batch);
    chunk.transitions.assign(std::make_move_iterator(batch.transitions.begin() + static_cast<std::ptrdiff_t>(begin)),
                             std::make_move_iterator(batch.transitions.begin() + static_cast<std::ptrdiff_t>(end)));
    if (!batch.priorities.empty())
      chunk.priorities.assign(batch.priorities.begin() + static_cast<std::ptrdiff_t>(begin),
                              batch.priorities.begin() + static_cast<std::ptrdiff_t>(end));
    chunks.push_back(std::move(chunk));
  }
  return chunks;
}

const char* MessageName(const Message& m) {
  return std::visit([](const auto& body) { return NameOf(body); }, m);
}

}  // namespace tensortier
