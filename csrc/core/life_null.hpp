// pau native interval core: the lifecycle's missing value. Time is int64 ns; kNull
// (the least int64) marks a missing value, as pau.engine._lifecycle's NULL. Its own
// header: the lifecycle's checks (life_checks.hpp) and the full ledger's cuts
// (crossing.hpp) are compiled in different translation units.
#pragma once

#include <cstdint>
#include <limits>

namespace pau::core::life {

constexpr int64_t kNull = std::numeric_limits<int64_t>::min();

}  // namespace pau::core::life
