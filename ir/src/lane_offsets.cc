#include "loom/ir/lane_offsets.h"

#include <algorithm>

#include "loom/ir/simplify.h"

namespace loom::ir {

namespace {

// Lanes all constant: the value of every lane.
std::optional<std::vector<int64_t>> constant_lanes(const std::optional<LaneOffsets>& d) {
  if (!d) return std::nullopt;
  const int64_t* b = as_const_int(d->base);
  if (!b) return std::nullopt;
  std::vector<int64_t> v = d->offsets;
  for (int64_t& x : v) x += *b;
  return v;
}

LaneOffsets from_constants(const std::vector<int64_t>& v, DataType t) {
  LaneOffsets r{make_const(t.element_of(), double(v[0])), v};
  for (int64_t& x : r.offsets) x -= v[0];
  return r;
}

// constant_lane_offsets before its base is simplified.
std::optional<LaneOffsets> decompose(const Expr& e) {
  const int lanes = e.type().lanes();
  if (!e.type().is_int() && !e.type().is_uint()) return std::nullopt;
  if (lanes == 1) return LaneOffsets{e, {0}};
  switch (e.kind()) {
    case ExprKind::Broadcast:
      return LaneOffsets{e.as<BroadcastNode>()->value, std::vector<int64_t>(size_t(lanes), 0)};
    case ExprKind::Ramp: {
      auto* r = e.as<RampNode>();
      const int64_t* s = as_const_int(r->stride);
      if (!s) return std::nullopt;
      LaneOffsets d{r->base, {}};
      for (int i = 0; i < lanes; ++i) d.offsets.push_back(*s * i);
      return d;
    }
    case ExprKind::Cast: {
      // Only casts that keep every value (to as many bits or more; an unsigned source to an unsigned
      // type or a wider signed one): a narrowing or sign-changing cast wraps lanes around, which
      // offsets cannot express.
      auto* c = e.as<CastNode>();
      DataType from = c->value.type(), to = e.type();
      bool keeps = (from.is_int() && to.is_int() && to.bits() >= from.bits()) ||
                   (from.is_uint() && (to.is_int() ? to.bits() > from.bits() : to.bits() >= from.bits()));
      if (!keeps) return std::nullopt;
      auto d = decompose(c->value);
      if (!d) return std::nullopt;
      d->base = cast(e.type().element_of(), d->base);
      return d;
    }
    case ExprKind::Add:
    case ExprKind::Sub:
    case ExprKind::Mul:
    case ExprKind::Div:
    case ExprKind::Mod:
    case ExprKind::Min:
    case ExprKind::Max: {
      auto* op = as_binary(e);
      auto a = decompose(op->a), b = decompose(op->b);
      if (!a || !b) return std::nullopt;
      if (e.kind() == ExprKind::Add || e.kind() == ExprKind::Sub) {
        const int64_t sign = e.kind() == ExprKind::Add ? 1 : -1;
        LaneOffsets d{e.kind() == ExprKind::Add ? a->base + b->base : a->base - b->base, a->offsets};
        for (size_t i = 0; i < d.offsets.size(); ++i) d.offsets[i] += sign * b->offsets[i];
        return d;
      }
      auto ca = constant_lanes(a), cb = constant_lanes(b);
      bool b_uniform = std::all_of(b->offsets.begin(), b->offsets.end(), [](int64_t x) { return x == 0; });
      bool a_uniform = std::all_of(a->offsets.begin(), a->offsets.end(), [](int64_t x) { return x == 0; });
      if (e.kind() == ExprKind::Mul && cb && b_uniform) {  // x * c
        LaneOffsets d{a->base * b->base, a->offsets};
        for (int64_t& x : d.offsets) x *= (*cb)[0];
        return d;
      }
      if (e.kind() == ExprKind::Mul && ca && a_uniform) {  // c * x
        LaneOffsets d{a->base * b->base, b->offsets};
        for (int64_t& x : d.offsets) x *= (*ca)[0];
        return d;
      }
      if (!ca || !cb) return std::nullopt;
      std::vector<int64_t> v(static_cast<size_t>(lanes));
      for (size_t i = 0; i < v.size(); ++i) {
        int64_t x = (*ca)[i], y = (*cb)[i];
        if ((e.kind() == ExprKind::Div || e.kind() == ExprKind::Mod) && y == 0) return std::nullopt;
        v[i] = e.kind() == ExprKind::Mul   ? x * y
               : e.kind() == ExprKind::Div ? floor_div(x, y)
               : e.kind() == ExprKind::Mod ? floor_mod(x, y)
               : e.kind() == ExprKind::Min ? std::min(x, y)
                                           : std::max(x, y);
      }
      return from_constants(v, e.type());
    }
    default:
      return std::nullopt;
  }
}

}  // namespace

std::optional<LaneOffsets> constant_lane_offsets(const Expr& index) {
  std::optional<LaneOffsets> d = decompose(index);
  if (d) d->base = simplify(d->base);
  return d;
}

std::vector<OffsetRun> offset_runs(const std::vector<int64_t>& offsets) {
  std::vector<int64_t> v = offsets;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::vector<OffsetRun> runs;
  for (int64_t x : v)
    if (!runs.empty() && runs.back().start + runs.back().length == x)
      ++runs.back().length;
    else
      runs.push_back({x, 1});
  return runs;
}

}  // namespace loom::ir
