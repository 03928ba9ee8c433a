// A driver for the fuzz targets without libFuzzer, linked against the normal build's libraries:
// it runs every file of a corpus folder, then a fixed number of deterministic mutations of them
// (the same inputs on every machine for a given seed). The test suite replays the committed
// corpora this way (under valgrind for memory errors, natively for the mutations), so that it does
// not rebuild Loom instrumented; coverage-guided campaigns with ASan + UBSan stay with libFuzzer
// (scripts/fuzz.sh), and what they find is added to fuzz/corpus.
//
//   fuzz_<target> CORPUS_DIR [--mutations N] [--seed S] [--timeout SECONDS] [--crash-prefix P]
//
// A crash, abort or an input that runs past the time bound writes that input to
// <crash-prefix><index> and exits non-zero, naming it.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;

// The input being run and where to save it, for the signal handlers (which may only call
// async-signal-safe functions: open, write, _exit).
const uint8_t* g_current = nullptr;
size_t g_current_size = 0;
char g_crash_path[4096] = "";

void write_str(const char* s) { (void)!write(2, s, strlen(s)); }

[[noreturn]] void on_fatal(int sig) {
  write_str(sig == SIGALRM ? "fuzz replay: input ran past the time bound\n" : "fuzz replay: input crashed\n");
  if (g_crash_path[0]) {
    int fd = open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      (void)!write(fd, g_current, g_current_size);
      close(fd);
      write_str("fuzz replay: input saved as ");
      write_str(g_crash_path);
      write_str("\n");
    }
  }
  _exit(sig == SIGALRM ? 3 : 2);
}

struct Options {
  std::string corpus;
  uint64_t mutations = 0;
  uint64_t seed = 1;
  unsigned timeout_s = 10;
  std::string crash_prefix = "crash-";
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "fuzz replay: " << why
            << "\nusage: fuzz_<target> CORPUS_DIR [--mutations N] [--seed S] [--timeout SECONDS] [--crash-prefix P]\n";
  std::exit(64);
}

uint64_t parse_count(const std::string& flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno || end == text || *end || text[0] == '-') usage(flag + " takes a non-negative integer, not '" + text + "'");
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--mutations")
      o.mutations = parse_count(a, value());
    else if (a == "--seed")
      o.seed = parse_count(a, value());
    else if (a == "--timeout")
      o.timeout_s = static_cast<unsigned>(std::max<uint64_t>(1, parse_count(a, value())));
    else if (a == "--crash-prefix")
      o.crash_prefix = value();
    else if (!a.empty() && a[0] == '-')
      usage("unknown option " + a);
    else if (o.corpus.empty())
      o.corpus = a;
    else
      usage("one corpus folder only (got '" + o.corpus + "' and '" + a + "')");
  }
  if (o.corpus.empty()) usage("no corpus folder");
  return o;
}

// The corpus in name order, so that indices (and mutations) are the same on every machine.
std::vector<Bytes> read_corpus(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) usage("corpus folder '" + dir + "' does not exist");
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<Bytes> corpus;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    corpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return corpus;
}

// libFuzzer-like mutations: bit flips, boundary bytes and integers, erased, inserted, repeated
// and spliced ranges. Each mutant applies 1-4 of them to one corpus entry.
class Mutator {
 public:
  Mutator(const std::vector<Bytes>& corpus, uint64_t seed) : corpus_(corpus), rng_(seed) {
    for (const auto& c : corpus_) max_size_ = std::max(max_size_, c.size());
    max_size_ = std::max<size_t>(64, 2 * max_size_);
  }

  Bytes next() {
    Bytes b = corpus_.empty() ? Bytes{} : corpus_[pick(corpus_.size())];
    for (size_t n = 1 + pick(4); n > 0; --n) mutate(b);
    if (b.size() > max_size_) b.resize(max_size_);
    return b;
  }

 private:
  size_t pick(size_t n) { return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng_) : 0; }

  void mutate(Bytes& b) {
    static constexpr std::array<uint8_t, 8> kBytes = {0x00, 0x01, 0x7f, 0x80, 0xff, 0xfe, 0x20, 0x10};
    static constexpr std::array<uint64_t, 8> kInts = {0,      1,          0x7f,       0x80,
                                                      0xffff, 0x7fffffff, 0x80000000, 0xffffffffffffffffULL};
    switch (b.empty() ? 3 : pick(8)) {
      case 0:
        b[pick(b.size())] ^= static_cast<uint8_t>(1u << pick(8));
        break;
      case 1:
        b[pick(b.size())] = kBytes[pick(kBytes.size())];
        break;
      case 2: {  // erase a range
        size_t at = pick(b.size()), n = 1 + pick(std::min<size_t>(16, b.size() - at));
        b.erase(b.begin() + at, b.begin() + at + n);
        break;
      }
      case 3: {  // insert random bytes
        size_t at = pick(b.size() + 1), n = 1 + pick(8);
        Bytes ins(n);
        for (auto& x : ins) x = static_cast<uint8_t>(pick(256));
        b.insert(b.begin() + at, ins.begin(), ins.end());
        break;
      }
      case 4: {  // overwrite with a boundary integer of 1, 2, 4 or 8 bytes, little-endian
        size_t width = size_t{1} << pick(4);
        if (b.size() < width) break;
        uint64_t v = kInts[pick(kInts.size())];
        size_t at = pick(b.size() - width + 1);
        for (size_t i = 0; i < width; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
        break;
      }
      case 5: {  // repeat a range in place
        size_t at = pick(b.size()), n = 1 + pick(std::min<size_t>(32, b.size() - at));
        Bytes chunk(b.begin() + at, b.begin() + at + n);
        b.insert(b.begin() + at, chunk.begin(), chunk.end());
        break;
      }
      case 6: {  // splice: a range of another corpus entry over this one
        const Bytes& other = corpus_[pick(corpus_.size())];
        if (other.empty()) break;
        size_t from = pick(other.size()), n = 1 + pick(std::min<size_t>(64, other.size() - from));
        size_t at = pick(b.size());
        if (at + n > b.size()) b.resize(at + n);
        std::copy(other.begin() + from, other.begin() + from + n, b.begin() + at);
        break;
      }
      default:  // truncate
        b.resize(pick(b.size()));
        break;
    }
  }

  const std::vector<Bytes>& corpus_;
  std::mt19937_64 rng_;
  size_t max_size_ = 0;
};

// Each input runs from a heap block of exactly its size, as under libFuzzer, so that a read one
// byte past its end is a read past the block (which valgrind reports), not into a vector's spare
// capacity.
void run_one(const Bytes& input, unsigned timeout_s, const std::string& crash_path) {
  std::unique_ptr<uint8_t[]> exact(new uint8_t[input.size()]);
  std::copy(input.begin(), input.end(), exact.get());
  g_current = exact.get();
  g_current_size = input.size();
  snprintf(g_crash_path, sizeof g_crash_path, "%s", crash_path.c_str());
  alarm(timeout_s);
  LLVMFuzzerTestOneInput(exact.get(), input.size());
  alarm(0);
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM}) signal(sig, on_fatal);
  std::vector<Bytes> corpus = read_corpus(o.corpus);
  for (size_t i = 0; i < corpus.size(); ++i)
    run_one(corpus[i], o.timeout_s, o.crash_prefix + "corpus-" + std::to_string(i));
  Mutator mutator(corpus, o.seed);
  for (uint64_t i = 0; i < o.mutations; ++i)
    run_one(mutator.next(), o.timeout_s, o.crash_prefix + "mutation-" + std::to_string(i));
  std::cout << "fuzz replay: " << corpus.size() << " corpus inputs and " << o.mutations << " mutations (seed " << o.seed
            << "), no crash\n";
  return 0;
}
