// Writes the seed corpora of the fuzz targets: valid inputs made by the real
// writers (every protocol message, small workloads and plans, lookup files
// with and without a generalised section, config files). Run by hand when a
// format changes; the output is committed under fuzz/corpus/.
//
//   make_corpus OUT_DIR     (writes OUT_DIR/{protocol,workload,plan,lookup,config}/seed-*)
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <sys/stat.h>

#include "envs/first_touch.h"
#include "envs/placement_env.h"
#include "envs/synthetic.h"
#include "envs/workload_io.h"
#include "exporter/lookup_writer.h"
#include "protocol/codec.h"
#include "tests/common/hostile_frames.h"

using namespace tensortier;

namespace {

std::string g_out;

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  const std::string dir = g_out + "/" + target;
  ::mkdir(g_out.c_str(), 0755);
  ::mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/seed-" + name, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

Workload Small(SyntheticShape shape, int layers, uint64_t seed) {
  SyntheticOptions o;
  o.shape = shape;
  o.layers = layers;
  o.base_bytes = 65536;
  o.batch_size = 4;
  o.seed = seed;
  return GenerateSynthetic(o);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_corpus OUT_DIR\n");
    return 2;
  }
  g_out = argv[1];
  const Workload tiny = Small(SyntheticShape::kTiny, 3, 1);
  const Workload resnet = Small(SyntheticShape::kResnetLike, 2, 2);
  const Workload vgg = Small(SyntheticShape::kVggLike, 3, 3);
  const PlacementPlan plan = FirstTouchPlan(tiny, tiny.peak_live_bytes() / 3);
  const PlacementPlan plan2 = FirstTouchPlan(resnet, resnet.peak_live_bytes() / 2);

  // ---- workloads and plans
  Write("workload", "tiny", SerializeWorkload(tiny));
  Write("workload", "resnet", SerializeWorkload(resnet));
  Write("workload", "vgg", SerializeWorkload(vgg));
  Write("plan", "tiny", SerializePlan(plan));
  Write("plan", "resnet", SerializePlan(plan2));
  PlacementPlan empty_plan;
  Write("plan", "empty", SerializePlan(empty_plan));

  // ---- protocol: one of each message
  Transition t;
  t.observation.assign(kObservationSize, 0.25f);
  t.action = 1;
  t.reward = -2.5f;
  t.next_observation.assign(kObservationSize, 0.5f);
  t.done = true;
  RegisterMsg reg;
  reg.host = "host";
  reg.pid = 42;
  reg.worker_name = "w1";
  reg.tiers = {TierCapacity{Tier::kDram, 1u << 30}, TierCapacity{Tier::kSlow, 4u << 30}};
  reg.slow_tier_backend = "emulated:optane-dcpmm";
  Write("protocol", "register", EncodeMessage(reg));
  Write("protocol", "register_ack", EncodeMessage(RegisterAckMsg{3, 1000, 3}));
  HeartbeatMsg hb;
  hb.worker_id = 3;
  hb.episodes_done = 7;
  Write("protocol", "heartbeat", EncodeMessage(hb));
  TaskMsg task;
  task.task_id = 1;
  task.workload = tiny;
  task.env.dram_limit_bytes = tiny.peak_live_bytes() / 3;
  task.agent_config_json = "{\"hidden\":[32,32]}";
  Write("protocol", "task", EncodeMessage(task));
  WeightsMsg weights;
  weights.version = 9;
  weights.agent = "dqn";
  weights.blob = std::string(64, '\x11');
  Write("protocol", "weights", EncodeMessage(weights));
  TransitionBatchMsg batch;
  batch.worker_id = 3;
  batch.task_id = 1;
  batch.episode_id = 5;
  batch.policy_version = 9;
  batch.transitions = {t, t};
  batch.priorities = {1.0f, 0.5f};
  Write("protocol", "transitions", EncodeMessage(batch));
  EpisodeReportMsg report;
  report.worker_id = 3;
  report.episode_id = 5;
  report.steps = 2;
  report.runtime_ns = 1e6;
  report.backend = "cost-model";
  report.plan = plan;
  report.counters.measured = true;
  Write("protocol", "episode_report", EncodeMessage(report));
  Write("protocol", "error", EncodeMessage(ErrorMsg{ErrorCode::kUnknownWorker, "who are you"}));
  Write("protocol", "shutdown", EncodeMessage(ShutdownMsg{"done"}));
  Write("protocol", "wrong_version", EncodeMessageWithVersion(ShutdownMsg{"x"}, kProtocolVersion + 1));

  // ---- learner: frames of worker 1 (fuzz_learner's peer registers first), honest and hostile
  TransitionBatchMsg episode = batch;
  episode.worker_id = 1;
  episode.episode_id = 1;
  episode.transitions.assign(12, t);
  episode.priorities.clear();
  Write("learner", "transitions", EncodeMessage(episode));
  EpisodeReportMsg episode_report = report;
  episode_report.worker_id = 1;
  episode_report.episode_id = 1;
  Write("learner", "episode_report", EncodeMessage(episode_report));
  Write("learner", "heartbeat", EncodeMessage(HeartbeatMsg{1, 0, {}}));
  episode.episode_id = 2;
  Write("learner", "chunk", EncodeMessage(SplitIntoChunks(episode, 5).front()));
  Write("learner", "shared_struct_lists", testing::SharedStructListBatch(1, 3));
  Write("learner", "nan_reward",
        testing::HandBatch(1, 4, 4, [](unsigned, int i) { return i < 0 ? std::nanf("") : 0.5f; }));

  // ---- lookup files
  LookupContents c;
  c.primary_signature = tiny.Signature();
  c.created_unix_seconds = 1700000000;
  c.plans.push_back(MakePlanTableEntry(tiny, plan));
  c.info = "producer: make_corpus\n";
  Write("lookup", "plans_only", SerializeLookup(c));
  c.plans.push_back(MakePlanTableEntry(resnet, plan2));
  c.has_generalised = true;
  GeneralisedTable& g = c.generalised;
  g.observation_size = kObservationSize;
  g.fine_bins = 4;
  QuantisedFeature f0;
  f0.observation_index = kObsTier;
  f0.bins = 2;
  f0.stride = 1;
  f0.lo = 0;
  f0.scale = 4;
  f0.remap = {0, 0, 1, 1};
  QuantisedFeature f1 = f0;
  f1.observation_index = kObsHeat;
  f1.stride = 2;
  f1.lo = -1;
  f1.scale = 2;
  g.features = {f0, f1};
  g.cell_count = 4;
  g.constants = DefaultLookupConstants(tiny.peak_live_bytes() / 3);
  g.bitmap = {0b1010};
  Write("lookup", "plans_and_generalised", SerializeLookup(c));
  c.plans.clear();
  Write("lookup", "generalised_only", SerializeLookup(c));
  // With the policy's network (19-4-2): tt_lookup_decide runs its forward pass.
  NetworkLayer hidden_layer{kObservationSize, 4, std::vector<float>(kObservationSize * 4, 0.25f), {0.5f, -0.5f, 0, 1}};
  NetworkLayer out_layer{4, 2, {1, -1, 0.5f, 0, -1, 1, 0, 0.5f}, {0, 0.1f}};
  c.network = {hidden_layer, out_layer};
  Write("lookup", "generalised_and_network", SerializeLookup(c));

  // ---- config files (what a run directory's config.toml looks like, and INI)
  Write("config", "train",
        "log-level=\"info\"\n[train]\nworkload=\"synthetic:tiny:3\"\ndram-fraction=0.2\nepisodes=40\n"
        "agent=\"dqn\"\nmode=\"sync\"\nhidden=[64, 64]\nbatch-size=32\nworkers=2\nprometheus=false\n");
  Write("config", "learner",
        "[learner]\nbind=\"tcp://127.0.0.1:5555\"\nmin-workers=2\nsecret-key=\"keys/learner.key\"\n"
        "insecure-plaintext=false\nheartbeat-ms=500\nmax-seconds=1.5\n");
  Write("config", "worker", "; INI\n[worker]\nconnect=tcp://127.0.0.1:5555\ngive-up-seconds=10\n");
  Write("config", "dotted", "train.episodes = 10\ntrain.hidden = [1,2,3]\n'learner'.'bind' = 'x'\n");
  std::printf("corpora written to %s\n", g_out.c_str());
  return 0;
}
