// Internal to loom_regress: the files a run shares between processes (results, rounds, compiled
// models) are read whole and written whole or not at all.
#pragma once
#include <filesystem>
#include <string>

namespace loom::regress {

// The file's bytes, "" if it cannot be read.
std::string read_file(const std::filesystem::path& p);
// Written to a temporary beside it, then renamed over it: a reader never sees half a file.
void write_atomically(const std::filesystem::path& p, const std::string& text);

}  // namespace loom::regress
