// Internal to loom_regress: the files a run shares between processes (results, rounds, compiled
// models) are read whole and written whole or not at all.
#pragma once
#include <filesystem>
#include <functional>
#include <string>

namespace loom::regress {

// The file's bytes, "" if it cannot be read.
std::string read_file(const std::filesystem::path& p);
// `write` fills a temporary beside `p`, which is then renamed over it: a reader never sees half a file.
void replace_atomically(const std::filesystem::path& p, const std::function<void(const std::filesystem::path&)>& write);
// replace_atomically with `text` as the file's bytes.
void write_atomically(const std::filesystem::path& p, const std::string& text);

}  // namespace loom::regress
