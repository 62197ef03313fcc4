#!/usr/bin/python3
"""Gradient updates per second of DQN and discrete SAC written in plain
PyTorch: the same networks (15-128-128-2 MLPs), the same losses and
optimisers as agents/dqn_agent.cc and agents/sac_agent.cc, written the way a
competent PyTorch user would (nn.Sequential, torch.optim.Adam, autograd).
The replay is numpy arrays sampled with numpy, as the C++ side samples its
ReplayBuffer inside each update. Prints one JSON line, like bench_updates.

Run with Debian's /usr/bin/python3 (python3-torch).
"""
import argparse
import json
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

OBS = 15
ACTIONS = 2
HIDDEN = (128, 128)


def mlp(inp, hidden, out):
    layers = []
    for h in hidden:
        layers += [nn.Linear(inp, h), nn.ReLU()]
        inp = h
    layers.append(nn.Linear(inp, out))
    return nn.Sequential(*layers)


class Replay:
    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.obs = rng.random((n, OBS), dtype=np.float32)
        self.next_obs = rng.random((n, OBS), dtype=np.float32)
        self.action = rng.integers(0, ACTIONS, size=n, dtype=np.int64)
        self.reward = (rng.random(n, dtype=np.float32) - 0.5).astype(np.float32)
        self.done = (rng.integers(0, 50, size=n) == 0).astype(np.float32)
        self.rng = np.random.default_rng(seed + 1)

    def sample(self, batch):
        i = self.rng.integers(0, len(self.obs), size=batch)
        return (torch.from_numpy(self.obs[i]), torch.from_numpy(self.action[i]),
                torch.from_numpy(self.reward[i]), torch.from_numpy(self.next_obs[i]),
                torch.from_numpy(self.done[i]))


class Dqn:
    """Double DQN, Huber loss, clip_grad_norm_(10), Adam(1e-4), hard target
    sync every 100 updates: bench_updates.cc's DqnConfig."""

    def __init__(self, batch):
        self.batch = batch
        self.q = mlp(OBS, HIDDEN, ACTIONS)
        self.q_target = mlp(OBS, HIDDEN, ACTIONS)
        self.q_target.load_state_dict(self.q.state_dict())
        self.opt = torch.optim.Adam(self.q.parameters(), lr=1e-4)
        self.gamma = 0.99
        self.updates = 0

    def update(self, replay):
        obs, action, reward, next_obs, done = replay.sample(self.batch)
        with torch.no_grad():
            next_action = self.q(next_obs).argmax(1, keepdim=True)
            next_q = self.q_target(next_obs).gather(1, next_action).squeeze(1)
            target = reward + self.gamma * (1 - done) * next_q
        q = self.q(obs).gather(1, action.unsqueeze(1)).squeeze(1)
        loss = F.huber_loss(q, target, delta=1.0)
        self.opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.q.parameters(), 10.0)
        self.opt.step()
        self.updates += 1
        if self.updates % 100 == 0:
            self.q_target.load_state_dict(self.q.state_dict())


class Sac:
    """Discrete SAC as CleanRL's sac_atari, with SacConfig's defaults: twin
    critics and Polyak targets (tau 0.005 every update), actor and alpha
    updated every update, exact expectations over the two actions."""

    def __init__(self, batch):
        self.batch = batch
        self.actor = mlp(OBS, HIDDEN, ACTIONS)
        self.q1 = mlp(OBS, HIDDEN, ACTIONS)
        self.q2 = mlp(OBS, HIDDEN, ACTIONS)
        self.q1_target = mlp(OBS, HIDDEN, ACTIONS)
        self.q2_target = mlp(OBS, HIDDEN, ACTIONS)
        self.q1_target.load_state_dict(self.q1.state_dict())
        self.q2_target.load_state_dict(self.q2.state_dict())
        self.q_opt = torch.optim.Adam(list(self.q1.parameters()) + list(self.q2.parameters()), lr=3e-4)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=3e-4)
        self.log_alpha = torch.zeros(1, requires_grad=True)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=3e-4)
        self.alpha = self.log_alpha.exp().item()
        self.target_entropy = -0.89 * np.log(1.0 / ACTIONS)
        self.gamma = 0.99
        self.tau = 0.005

    def update(self, replay):
        obs, action, reward, next_obs, done = replay.sample(self.batch)
        with torch.no_grad():
            next_logp = F.log_softmax(self.actor(next_obs), dim=1)
            next_q = torch.min(self.q1_target(next_obs), self.q2_target(next_obs))
            v = (next_logp.exp() * (next_q - self.alpha * next_logp)).sum(1)
            y = reward + self.gamma * (1 - done) * v
        a = action.unsqueeze(1)
        q1a = self.q1(obs).gather(1, a).squeeze(1)
        q2a = self.q2(obs).gather(1, a).squeeze(1)
        q_loss = F.mse_loss(q1a, y) + F.mse_loss(q2a, y)
        self.q_opt.zero_grad()
        q_loss.backward()
        self.q_opt.step()

        logp = F.log_softmax(self.actor(obs), dim=1)
        p = logp.exp()
        with torch.no_grad():
            min_q = torch.min(self.q1(obs), self.q2(obs))
        actor_loss = (p * (self.alpha * logp - min_q)).sum(1).mean()
        self.actor_opt.zero_grad()
        actor_loss.backward()
        self.actor_opt.step()

        p_d, logp_d = p.detach(), logp.detach()
        alpha_loss = (p_d * (-self.log_alpha.exp() * (logp_d + self.target_entropy))).sum(1).mean()
        self.alpha_opt.zero_grad()
        alpha_loss.backward()
        self.alpha_opt.step()
        self.alpha = self.log_alpha.exp().item()

        with torch.no_grad():
            for net, target in ((self.q1, self.q1_target), (self.q2, self.q2_target)):
                for param, target_param in zip(net.parameters(), target.parameters()):
                    target_param.lerp_(param, self.tau)
        # The C++ agent reads these back every update; so does CleanRL's logging.
        return q_loss.item(), actor_loss.item()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--agent", choices=["dqn", "sac"], default="sac")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0 = default)")
    ap.add_argument("--warmup-updates", type=int, default=50)
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    replay = Replay(10000, 1)
    agent = Dqn(args.batch) if args.agent == "dqn" else Sac(args.batch)
    for _ in range(args.warmup_updates):
        agent.update(replay)
    n = 0
    start = time.perf_counter()
    while True:
        for _ in range(16):
            agent.update(replay)
        n += 16
        elapsed = time.perf_counter() - start
        if elapsed >= args.seconds:
            break
    print(json.dumps({"impl": "python", "agent": args.agent, "batch": args.batch,
                      "threads": torch.get_num_threads(), "updates": n,
                      "updates_per_second": round(n / elapsed, 1)}))


if __name__ == "__main__":
    main()
