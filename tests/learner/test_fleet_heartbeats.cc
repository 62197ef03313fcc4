// Heartbeats, expiry and the farewell on their own, over a real socket on
// loopback with a fake worker.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "learner/fleet_heartbeats.h"
#include "protocol/codec.h"
#include "tests/common/receive.h"

namespace tensortier {
namespace {

using namespace std::chrono_literals;
using testing::ReceiveA;

TEST(FleetHeartbeats, BeatsEachIntervalExpiresOnlyOnceTheQueueIsReadAndSaysGoodbyeToLatePeers) {
  FleetServer server("tcp://127.0.0.1:*");
  FleetClient worker(server.endpoint());
  RegisterMsg hello;
  hello.worker_name = "w";
  hello.incarnation = 7;
  ASSERT_TRUE(worker.Send(EncodeMessage(hello)));
  std::optional<IncomingFrame> in;
  for (int i = 0; i < 200 && !in; ++i) in = server.Receive(20ms);  // hang guard
  ASSERT_TRUE(in);
  FleetRegistry fleet(1);
  const auto registration = fleet.Register(in->peer, hello, FleetHeartbeats::Clock::now());
  const uint32_t id = fleet.Find(in->peer)->id;
  (void)registration;

  FleetHeartbeats heartbeats(server, fleet, 30ms, 3);
  heartbeats.Restart();
  std::this_thread::sleep_for(40ms);  // at least one interval
  EXPECT_EQ(heartbeats.KeepAlive(/*queue_drained=*/true), 0u);
  auto beat = ReceiveA<HeartbeatMsg>(worker, 5s);
  ASSERT_TRUE(beat);
  EXPECT_EQ(beat->worker_id, id);

  // Silent for longer than interval x liveness: expired only once the
  // learner has read everything queued.
  fleet.Find(in->peer)->last_seen = FleetHeartbeats::Clock::now() - 10s;
  std::this_thread::sleep_for(40ms);
  EXPECT_EQ(heartbeats.KeepAlive(/*queue_drained=*/false), 0u);
  EXPECT_EQ(fleet.size(), 1u);
  std::this_thread::sleep_for(40ms);
  EXPECT_EQ(heartbeats.KeepAlive(/*queue_drained=*/true), 1u);
  EXPECT_EQ(fleet.size(), 0u);

  // The expired worker speaks again as the run ends: it is told to stop.
  ASSERT_TRUE(worker.Send(EncodeMessage(HeartbeatMsg{})));
  heartbeats.Farewell("training finished");
  auto bye = ReceiveA<ShutdownMsg>(worker, 5s);
  ASSERT_TRUE(bye);
  EXPECT_EQ(bye->reason, "training finished");
}

}  // namespace
}  // namespace tensortier
