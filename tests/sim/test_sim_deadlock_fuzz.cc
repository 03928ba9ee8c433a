// Random dependency-token structures (seeded): streams of no-op instructions on the three modules
// with random legal pop/push flags. The simulator must finish exactly when an independent model —
// which steps one randomly chosen ready module at a time — finishes, and otherwise report the same
// stuck instructions as a deadlock.
#include <gtest/gtest.h>

#include <deque>
#include <random>

#include "accel/accel_harness.h"

namespace loom::accel {
namespace {

Instruction noop_on(Module m) {
  Instruction i;
  i.opcode = m == Module::Store ? Opcode::Store : Opcode::Load;
  i.mem = m == Module::Load ? MemType::Inp : m == Module::Store ? MemType::Out : MemType::Uop;
  return i;  // zero-sized transfer: only its flags matter
}

// The stuck queue heads (instruction indices) when no module can move; empty if the stream drains.
std::vector<size_t> reference_stuck(const std::vector<Instruction>& s, std::mt19937_64& g) {
  std::deque<size_t> q[3];
  for (size_t k = 0; k < s.size(); ++k) q[int(s[k].module())].push_back(k);
  // tokens[from][to], modules 0=load 1=compute 2=store.
  int tokens[3][3] = {};
  auto ready = [&](int m) {
    if (q[m].empty()) return false;
    const Instruction& i = s[q[m].front()];
    return (!i.dep.pop_prev || tokens[m - 1][m] > 0) && (!i.dep.pop_next || tokens[m + 1][m] > 0);
  };
  for (;;) {
    std::vector<int> r;
    for (int m = 0; m < 3; ++m)
      if (ready(m)) r.push_back(m);
    if (r.empty()) break;
    int m = r[g() % r.size()];
    const Instruction& i = s[q[m].front()];
    if (i.dep.pop_prev) --tokens[m - 1][m];
    if (i.dep.pop_next) --tokens[m + 1][m];
    if (i.dep.push_prev) ++tokens[m][m - 1];
    if (i.dep.push_next) ++tokens[m][m + 1];
    q[m].pop_front();
  }
  std::vector<size_t> stuck;
  for (auto& x : q)
    if (!x.empty()) stuck.push_back(x.front());
  return stuck;
}

TEST(SimDeadlock, RandomTokenStructuresMatchAnIndependentModel) {
  AccelConfig cfg = default_config();
  IsaLayout L(cfg);
  std::mt19937_64 g(2024);
  int finished = 0, deadlocked = 0;
  for (int n = 0; n < 400; ++n) {
    SCOPED_TRACE("stream " + std::to_string(n));
    std::vector<Instruction> s;
    int length = 3 + int(g() % 14);
    auto flag = [&] { return g() % 4 == 0; };
    for (int k = 0; k < length; ++k) {
      Module m = Module(g() % 3);
      Instruction i = noop_on(m);
      if (m != Module::Load) i.dep.pop_prev = flag(), i.dep.push_prev = flag();
      if (m != Module::Store) i.dep.pop_next = flag(), i.dep.push_next = flag();
      s.push_back(i);
    }
    Instruction fin;
    fin.opcode = Opcode::Finish;
    s.push_back(fin);
    std::vector<size_t> stuck = reference_stuck(s, g);

    test::AccelHarness h(cfg);
    std::vector<InsnWord> words;
    for (auto& i : s) words.push_back(encode(i, L));
    auto buf = h.drv.alloc(words.size() * 16);
    h.drv.copy_to_device(buf, words.data(), words.size() * 16);
    h.dev->launch(buf.addr, uint32_t(words.size()));
    if (stuck.empty()) {
      ++finished;
      ASSERT_NO_THROW(h.dev->wait()) << disassemble(s);
      continue;
    }
    ++deadlocked;
    std::string e = test::error_text<DeviceError>([&] { h.dev->wait(std::chrono::milliseconds(1000)); });
    ASSERT_NE(e.find("dependency deadlock"), std::string::npos) << e << "\n" << disassemble(s);
    EXPECT_EQ(h.dev->read_reg(reg::kErrorIndex), *std::min_element(stuck.begin(), stuck.end()));
    for (size_t k : stuck) {
      // Simulators add the instruction's disassembly; a board (BoardDevice) reads only its registers.
      std::string who = std::string(to_string(s[k].module())) + " module waits at instruction " + std::to_string(k) +
                        (test::test_backend_is_board() ? "" : " (");
      EXPECT_NE(e.find(who), std::string::npos) << "expected '" << who << "' in: " << e;
    }
  }
  // The generator must exercise both outcomes.
  EXPECT_GT(finished, 40);
  EXPECT_GT(deadlocked, 40);
}

}  // namespace
}  // namespace loom::accel
