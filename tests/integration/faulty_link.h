// A faulty network link for tests: a ZeroMQ proxy on a thread, placed
// between workers (DEALERs, which connect to endpoint()) and a learner
// (ROUTER). Each worker socket gets its own DEALER towards the learner, so
// the learner still sees one peer per worker. Every frame, in either
// direction, is dropped, duplicated or delayed (which also reorders it)
// with the given probabilities, drawn from a seeded generator.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

namespace tensortier::testing {

struct LinkFaults {
  double drop = 0.05;
  double duplicate = 0.05;
  double delay = 0.10;
  int max_delay_ms = 60;
  uint64_t seed = 1;
};

struct LinkCounters {
  std::atomic<uint64_t> forwarded{0};
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> duplicated{0};
  std::atomic<uint64_t> delayed{0};
};

class FaultyLink {
 public:
  FaultyLink(std::string learner_endpoint, LinkFaults faults)
      : learner_(std::move(learner_endpoint)), faults_(faults), rng_(faults.seed), frontend_(ctx_, zmq::socket_type::router) {
    frontend_.set(zmq::sockopt::linger, 0);
    frontend_.bind("tcp://127.0.0.1:*");
    endpoint_ = frontend_.get(zmq::sockopt::last_endpoint);
    thread_ = std::thread([this] { Loop(); });
  }
  ~FaultyLink() {
    stop_.store(true);
    thread_.join();
  }
  const std::string& endpoint() const { return endpoint_; }
  const LinkCounters& counters() const { return counters_; }

 private:
  struct Held {
    std::chrono::steady_clock::time_point due;
    bool to_learner;
    std::string peer;
    std::string payload;
  };

  zmq::socket_t& Backend(const std::string& peer) {
    auto it = backends_.find(peer);
    if (it != backends_.end()) return *it->second;
    auto s = std::make_unique<zmq::socket_t>(ctx_, zmq::socket_type::dealer);
    s->set(zmq::sockopt::linger, 0);
    s->connect(learner_);
    return *backends_.emplace(peer, std::move(s)).first->second;
  }

  void Deliver(bool to_learner, const std::string& peer, const std::string& payload) {
    if (to_learner) {
      Backend(peer).send(zmq::buffer(payload), zmq::send_flags::dontwait);
    } else {
      frontend_.send(zmq::buffer(peer), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      frontend_.send(zmq::buffer(payload), zmq::send_flags::dontwait);
    }
    ++counters_.forwarded;
  }

  // Decides the fate of one frame.
  void Pass(bool to_learner, const std::string& peer, std::string payload) {
    std::uniform_real_distribution<double> u(0, 1);
    if (u(rng_) < faults_.drop) {
      ++counters_.dropped;
      return;
    }
    const int copies = u(rng_) < faults_.duplicate ? 2 : 1;
    if (copies == 2) ++counters_.duplicated;
    for (int i = 0; i < copies; ++i) {
      if (u(rng_) < faults_.delay) {
        ++counters_.delayed;
        std::uniform_int_distribution<int> ms(1, faults_.max_delay_ms);
        held_.push_back({std::chrono::steady_clock::now() + std::chrono::milliseconds(ms(rng_)), to_learner, peer, payload});
      } else {
        Deliver(to_learner, peer, payload);
      }
    }
  }

  void Loop() {
    while (!stop_.load()) {
      std::vector<zmq::pollitem_t> items{{frontend_.handle(), 0, ZMQ_POLLIN, 0}};
      std::vector<std::string> peers;
      for (auto& [peer, socket] : backends_) {
        items.push_back({socket->handle(), 0, ZMQ_POLLIN, 0});
        peers.push_back(peer);
      }
      zmq::poll(items.data(), items.size(), std::chrono::milliseconds(2));
      if (items[0].revents & ZMQ_POLLIN) {
        std::vector<zmq::message_t> parts;
        while (zmq::recv_multipart(frontend_, std::back_inserter(parts), zmq::recv_flags::dontwait)) {
          if (parts.size() == 2) Pass(true, parts[0].to_string(), parts[1].to_string());
          parts.clear();
        }
      }
      for (size_t i = 1; i < items.size(); ++i) {
        if (!(items[i].revents & ZMQ_POLLIN)) continue;
        zmq::socket_t& s = *backends_[peers[i - 1]];
        zmq::message_t msg;
        while (s.recv(msg, zmq::recv_flags::dontwait)) Pass(false, peers[i - 1], msg.to_string());
      }
      const auto now = std::chrono::steady_clock::now();
      for (auto it = held_.begin(); it != held_.end();) {
        if (it->due > now) {
          ++it;
          continue;
        }
        Deliver(it->to_learner, it->peer, it->payload);
        it = held_.erase(it);
      }
    }
  }

  std::string learner_;
  LinkFaults faults_;
  std::mt19937_64 rng_;
  zmq::context_t ctx_;
  zmq::socket_t frontend_;
  std::string endpoint_;
  std::map<std::string, std::unique_ptr<zmq::socket_t>> backends_;
  std::vector<Held> held_;
  LinkCounters counters_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tensortier::testing
