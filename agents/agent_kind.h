// Which agent a learner trains: the names are those of PlacementAgent::name()
// and of checkpoints (dqn.ckpt, sac.ckpt).
#pragma once

#include <string>

#include "common/named_enum.h"

namespace tensortier {

enum class AgentKind { kDqn, kSac };

inline constexpr EnumName<AgentKind> kAgentKindNames[] = {{AgentKind::kDqn, "dqn"}, {AgentKind::kSac, "sac"}};

inline AgentKind ParseAgentKind(const std::string& name) { return ParseEnumName(kAgentKindNames, "agent", name); }
inline std::string AgentKindName(AgentKind kind) { return NameOfEnum(kAgentKindNames, kind); }

}  // namespace tensortier
