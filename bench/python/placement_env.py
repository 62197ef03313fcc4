#!/usr/bin/python3
"""The placement MDP of envs/placement_env.cc in plain Python and numpy, for
bench/python/compare_env.py: the same observation features (docs/mdp.md),
Algorithm 1's heats, step rewards, spill and OOM handling, plan building and
cost-model scoring (envs/cost_model.cc), written the way a competent Python
developer would port it (dicts and lists, numpy for the observation).

It reads a workload and env settings dumped by `bench_env --dump-json`.

usage: placement_env.py FILE --seconds S         steps/s of a random-action loop (JSON line)
       placement_env.py FILE --check-episodes N   the fixed action sequence, one JSON line per episode
"""
import argparse
import bisect
import json
import math
import random
import time

import numpy as np

DRAM, SLOW = 0, 1
OBS_SIZE = 15
NEW_TENSOR = 0.5


class Workload:
    def __init__(self, d):
        self.name = d["name"]
        self.kernel_ns = [k["dram_time_ns"] for k in d["kernels"]]
        self.size = [t["size_bytes"] for t in d["tensors"]]
        self.alloc = [t["alloc_kernel"] for t in d["tensors"]]
        self.free = [t["free_kernel"] for t in d["tensors"]]
        self.persistent = [t["persistent"] for t in d["tensors"]]
        dev = d["device"]
        self.bw_to_slow = dev["dram_to_slow_bytes_per_second"]
        self.bw_to_dram = dev["slow_to_dram_bytes_per_second"]
        self.slow_capacity = dev["slow_capacity_bytes"]
        K, T = len(self.kernel_ns), len(self.size)
        self.K, self.T = K, T
        accesses = sorted(d["accesses"], key=lambda a: (a["kernel"], a["tensor"]))
        # access[k][t] = (reads, writes, slow_penalty_ns)
        self.access = [dict() for _ in range(K)]
        self.tensor_kernels = [[] for _ in range(T)]
        for a in accesses:
            self.access[a["kernel"]][a["tensor"]] = (a["reads"], a["writes"], a["slow_penalty_ns"])
            self.tensor_kernels[a["tensor"]].append(a["kernel"])
        self.live = [[] for _ in range(K)]
        self.allocated = [[] for _ in range(K)]
        self.live_bytes = [0] * K
        for t in range(T):
            self.allocated[self.alloc[t]].append(t)
            for k in range(self.alloc[t], self.free[t] + 1):
                self.live[k].append(t)
                self.live_bytes[k] += self.size[t]
        self.peak_live = max(self.live_bytes)
        self.min_cost = sum(self.kernel_ns)
        self.max_cost = self.min_cost + sum(a["slow_penalty_ns"] for a in accesses)

    def copy_ns(self, nbytes, to):
        return nbytes / (self.bw_to_slow if to == SLOW else self.bw_to_dram) * 1e9

    def writes(self, k, t):
        a = self.access[k].get(t)
        return a is not None and a[1] > 0


# ---------------------------------------------------------------------------
# Algorithm 1 (envs/heat.cc)

def _minmax(v):
    if not v:
        return v
    lo, hi = min(v), max(v)
    rng = hi - lo
    return [(x - lo) / rng if rng > 0 else 0.0 for x in v]


def kernel_heats(w, k, limit, weights):
    live = w.live[k]
    never = float(w.K)
    reuse, future, size, life = [], [], [], []
    for t in live:
        uses = w.tensor_kernels[t]
        i = bisect.bisect_left(uses, k)
        reuse.append(float(uses[i] - k) if i < len(uses) else never)
        f = 0.0
        for kk in uses[i:]:
            r, wr, _ = w.access[kk][t]
            f += max(1, r + wr)
        future.append(f)
        size.append(float(w.size[t]))
        life.append(float(w.free[t] - w.alloc[t] + 1))
    reuse, future, size, life = _minmax(reuse), _minmax(future), _minmax(size), _minmax(life)
    n = len(live)

    def compute():
        heat = [weights["w_f"] * future[i] - weights["w_r"] * reuse[i] - weights["w_s"] * size[i]
                + weights["w_l"] * life[i] for i in range(n)]
        hot = sum(w.size[live[i]] for i in range(n) if heat[i] > weights["threshold"])
        return heat, hot

    heat, hot = compute()
    if w.live_bytes[k] <= limit:
        return heat
    low, high = 0.9 * limit, 1.1 * limit
    knob = "w_s" if w.live_bytes[k] >= 2.5 * limit else "w_r"
    iterations = 0
    while not (low <= hot <= high) and iterations < 2000:
        if hot > high:
            weights[knob] *= 1.02
        else:
            weights[knob] /= 1.02
        iterations += 1
        heat, hot = compute()
        if weights[knob] > 1e4 or weights[knob] < 1e-4:
            weights[knob] = min(max(weights[knob], 1e-4), 1e4)
            if knob == "w_s":
                break
            knob = "w_s"
    return heat


def all_heats(w, limit):
    weights = {"w_r": 1.0, "w_f": 1.0, "w_s": 1.0, "w_l": 1.0, "threshold": 0.0}
    return [kernel_heats(w, k, limit, weights) for k in range(w.K)]


# ---------------------------------------------------------------------------
# Plans and the cost model (envs/placement_plan.cc, envs/cost_model.cc)

def normalize_plan(initial, migrations):
    migrations = sorted(migrations, key=lambda m: (m[0], m[1]))
    tier = list(initial)
    kept = []
    for i, m in enumerate(migrations):
        if i + 1 < len(migrations) and migrations[i + 1][0] == m[0] and migrations[i + 1][1] == m[1]:
            continue
        if tier[m[1]] == m[2]:
            continue
        tier[m[1]] = m[2]
        kept.append(m)
    return kept


def evaluate_plan(w, initial, migrations, limit, async_mode):
    if len(initial) != w.T:
        raise ValueError("plan does not fit the workload")
    prev = -1
    for after, t, _ in migrations:
        if after < prev or not (w.alloc[t] <= after and after + 1 <= w.free[t]):
            raise ValueError("invalid migration")
        prev = after
    tier = list(initial)
    nxt = 0
    exec_total = migration_total = 0.0
    dram_peak = 0
    oom = False
    for k in range(w.K):
        blocking = overlapped = 0.0
        in_flight = []
        while nxt < len(migrations) and migrations[nxt][0] <= k - 1:
            _, t, to = migrations[nxt]
            nxt += 1
            if tier[t] == to:
                continue
            ns = w.copy_ns(w.size[t], to)
            if not async_mode or w.writes(k, t):
                blocking += ns
                tier[t] = to
            else:
                overlapped += ns
                in_flight.append((t, to))
        exec_ns = w.kernel_ns[k]
        for t, (_, _, penalty) in w.access[k].items():
            if tier[t] == SLOW:
                exec_ns += penalty
        dram = slow = 0
        for t in w.live[k]:
            if tier[t] == DRAM:
                dram += w.size[t]
            else:
                slow += w.size[t]
        for t, to in in_flight:
            if to == DRAM:
                dram += w.size[t]
            else:
                slow += w.size[t]
        dram_peak = max(dram_peak, dram)
        if (limit > 0 and dram > limit) or (w.slow_capacity > 0 and slow > w.slow_capacity):
            oom = True
        exec_total += exec_ns
        migration_total += blocking + max(overlapped - exec_ns, 0.0)
        for t, to in in_flight:
            tier[t] = to
    for t in range(w.T):
        if w.persistent[t] and tier[t] != initial[t]:
            migration_total += w.copy_ns(w.size[t], initial[t])
    return exec_total + migration_total, dram_peak, oom


# ---------------------------------------------------------------------------
# The MDP (envs/placement_env.cc)

class PlacementEnv:
    def __init__(self, w, cfg):
        self.w = w
        self.limit = cfg["dram_limit_bytes"]
        self.all_live = cfg["scope"] == "all_live"
        self.deeptm_reward = cfg["step_reward"] == "deeptm"
        self.spill = cfg["oom_handling"] == "spill_to_slow"
        self.spill_penalty = cfg["spill_penalty"]
        self.async_mode = cfg["mode"] == "async"
        self.beta = cfg["beta"]
        self.reward_fix = cfg["reward_fix"]
        self.oom_penalty = cfg["oom_penalty"]
        self.heats = all_heats(w, self.limit)
        self.bottleneck = [w.live_bytes[k] > self.limit for k in range(w.K)]
        self.order = [[] for _ in range(w.K)]
        self.max_steps = 0
        for k in range(w.K):
            if self.bottleneck[k]:
                heat = self.heats[k]
                self.order[k] = sorted(range(len(w.live[k])), key=lambda i: -heat[i])
                self.max_steps += len(w.live[k])
        span = w.max_cost - w.min_cost
        self.time_scale = self.beta * self.reward_fix / span if span > 0 else 0.0
        self.touched = [sum(w.size[t] for t in w.access[k]) for k in range(w.K)]
        self.done = True

    # -- episode ------------------------------------------------------------
    def reset(self):
        w = self.w
        self.tier = [DRAM] * w.T
        self.placed = [False] * w.T
        self.initial = [DRAM] * w.T
        self.migrations = []
        self.kernel = 0
        self.cursor = 0
        self.in_kernel = False
        self.done = False
        self.steps = 0
        self.spills = 0
        self.terminal_reward = 0.0
        self._advance()
        return np.zeros(OBS_SIZE, dtype=np.float32) if self.done else self._observation()

    def _current(self):
        k = self.kernel
        return self.w.live[k][self.order[k][self.cursor]]

    def _needs_decision(self, t):
        if self.all_live or not self.placed[t] or self.tier[t] == DRAM:
            return True
        k = self.kernel
        if t in self.w.access[k]:
            return True
        return self.async_mode and k + 1 < self.w.K and t in self.w.access[k + 1]

    def _advance(self):
        w = self.w
        while self.kernel < w.K:
            k = self.kernel
            if not self.in_kernel:
                if not self.bottleneck[k]:
                    for t in w.allocated[k]:
                        self.placed[t] = True
                    self.kernel += 1
                    continue
                self.in_kernel = True
                self.cursor = 0
                self.committed = 0
                self.undecided = w.live_bytes[k]
                self.resident_undecided = sum(w.size[t] for t in w.live[k]
                                              if self.placed[t] and self.tier[t] == DRAM)
            order = self.order[k]
            while self.cursor < len(order) and not self._needs_decision(self._current()):
                self.undecided -= w.size[self._current()]
                self.cursor += 1
            if self.cursor < len(order):
                return
            self.in_kernel = False
            self.kernel += 1
        self._finish(False)

    def _dram_needed(self, t, tier):
        if tier == DRAM:
            return self.w.size[t]
        moves = self.placed[t] and self.tier[t] != tier
        if not moves or not self.async_mode:
            return 0
        a = self.w.access[self.kernel].get(t)
        return 0 if (a is not None and a[1] > 0) else self.w.size[t]

    def _observation(self):
        w, k = self.w, self.kernel
        t = self._current()
        size = w.size[t]
        limit = float(self.limit)
        kernel_ns = max(w.kernel_ns[k], 1.0)
        a = w.access[k].get(t)
        o = [0.0] * OBS_SIZE
        o[0] = float(self.tier[t]) if self.placed[t] else NEW_TENSOR
        o[1] = math.tanh(self.heats[k][self.order[k][self.cursor]])
        o[2] = (limit - self.committed) / limit
        o[3] = 1.0
        if w.slow_capacity > 0:
            o[3] = 1.0 - (w.live_bytes[k] - self.committed) / w.slow_capacity
        o[4] = size / w.live_bytes[k]
        if a is not None:
            o[5] = 1.0
            o[6] = size / self.touched[k]
            o[7] = min(1.0, a[2] / kernel_ns)
        uses = w.tensor_kernels[t]
        i = bisect.bisect_right(uses, k)
        o[8] = (uses[i] - k) / w.K if i < len(uses) else 1.0
        o[9] = k / w.K
        if self.placed[t]:
            other = SLOW if self.tier[t] == DRAM else DRAM
            o[10] = min(1.0, w.copy_ns(size, other) / kernel_ns)
        o[11] = min(4.0, self.undecided / limit) / 4.0
        o[12] = min(1.0, size / limit)
        o[14] = min(1.0, self.resident_undecided / limit)
        if i < len(uses):
            nk = uses[i]
            o[13] = min(1.0, w.access[nk][t][2] / max(w.kernel_ns[nk], 1.0))
        return np.array(o, dtype=np.float32)

    def step(self, action):
        if self.done:
            raise RuntimeError("step after the episode ended")
        w, k = self.w, self.kernel
        t = self._current()
        size = w.size[t]
        a = w.access[k].get(t)
        kernel_ns = max(w.kernel_ns[k], 1.0)
        reward = 0.0
        chosen = action
        if chosen == DRAM and self.spill and self._dram_needed(t, DRAM) > self.limit - self.committed:
            chosen = SLOW
            reward -= self.spill_penalty
            self.spills += 1
        needed = self._dram_needed(t, chosen)
        if self.placed[t] and self.tier[t] == DRAM:
            self.resident_undecided -= size
        effective = chosen
        if not self.placed[t]:
            self.initial[t] = chosen
            self.placed[t] = True
        elif self.tier[t] != chosen:
            self.migrations.append((k - 1, t, chosen))
            overlapped = self.async_mode and not (a is not None and a[1] > 0)
            if overlapped:
                effective = self.tier[t]
            copy_ns = w.copy_ns(size, chosen)
            if self.deeptm_reward:
                reward -= min(1.0, copy_ns / kernel_ns)
            else:
                reward -= self.time_scale * (max(0.0, copy_ns - kernel_ns) if overlapped else copy_ns)
        self.tier[t] = chosen
        self.committed += needed
        self.undecided -= size
        self.steps += 1
        if self.committed > self.limit:
            reward -= self.oom_penalty
            self._finish(True)
            return np.zeros(OBS_SIZE, dtype=np.float32), reward, True
        if effective == DRAM and a is not None:
            if self.deeptm_reward:
                reward += size / self.touched[k]
            else:
                reward += self.time_scale * a[2]
        self.cursor += 1
        self._advance()
        if self.done:
            return np.zeros(OBS_SIZE, dtype=np.float32), reward + self.terminal_reward, True
        return self._observation(), reward, False

    def episodic_reward(self, normalised_cost, dram_peak):
        c = min(max(normalised_cost, 0.0), 2.0)
        peak = float(self.w.peak_live)
        price = min(max(1.0 - dram_peak / peak, 0.0), 1.0) if peak > 0 else 0.0
        return self.reward_fix * (self.beta * (1.0 - c) + (1.0 - self.beta) * price)

    def _finish(self, oom):
        w = self.w
        self.done = True
        for t in range(w.T):
            if not self.placed[t] and w.alloc[t] >= self.kernel:
                self.initial[t] = SLOW
        self.migrations = normalize_plan(self.initial, self.migrations)
        total_ns, dram_peak, _ = evaluate_plan(w, self.initial, self.migrations, self.limit, self.async_mode)
        span = w.max_cost - w.min_cost
        self.normalised_cost = (total_ns - w.min_cost) / span if span > 0 else 0.0
        peak = float(w.peak_live)
        price = min(max(1.0 - dram_peak / peak, 0.0), 1.0) if peak > 0 else 0.0
        self.oom = oom
        episodic = 0.0 if oom else self.episodic_reward(self.normalised_cost, dram_peak)
        if oom or self.deeptm_reward:
            self.terminal_reward = episodic
        else:
            self.terminal_reward = self.reward_fix * (1.0 - self.beta) * price


class ActionSequence:
    """bench_env's fixed sequence: the top bit of a 64-bit LCG."""

    def __init__(self):
        self.state = 12345

    def next(self):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        return self.state >> 63


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--check-episodes", type=int, default=0)
    args = ap.parse_args()
    with open(args.file) as f:
        d = json.load(f)
    w = Workload(d["workload"])
    setup_start = time.perf_counter()
    env = PlacementEnv(w, d["env"])
    setup_seconds = time.perf_counter() - setup_start

    if args.check_episodes > 0:
        actions = ActionSequence()
        for e in range(args.check_episodes):
            obs = env.reset()
            ret = obs_sum = 0.0
            steps = 0
            done = env.done
            while not done:
                obs_sum += float(np.sum(obs, dtype=np.float64))
                obs, r, done = env.step(actions.next())
                ret += r
                steps += 1
            print(json.dumps({"episode": e, "steps": steps, "return": ret, "observation_sum": obs_sum,
                              "normalised_cost": env.normalised_cost, "spills": env.spills, "oom": env.oom,
                              "migrations": len(env.migrations)}))
        return

    rng = random.Random(1)
    steps = episodes = 0
    checksum = 0.0
    start = time.perf_counter()
    while True:
        obs = env.reset()
        done = env.done
        while not done:
            obs2, r, done = env.step(rng.getrandbits(1))
            checksum += r + float(obs[0])
            obs = obs2
            steps += 1
        episodes += 1
        elapsed = time.perf_counter() - start
        if elapsed >= args.seconds:
            break
    print(json.dumps({"impl": "python", "workload": w.name, "kernels": w.K, "tensors": w.T,
                      "max_steps": env.max_steps, "episodes": episodes, "steps": steps,
                      "seconds": round(elapsed, 3), "steps_per_second": round(steps / elapsed, 1),
                      "episodes_per_second": round(episodes / elapsed, 2),
                      "setup_seconds": round(setup_seconds, 4), "checksum": checksum}))


if __name__ == "__main__":
    main()
