// Content hashes and on-disk caches of compiled artifacts (LLVM kernel objects, CUDA programs).
//
// A cache entry is a file named by the hash of everything that decides its contents; writes are
// atomic (a temporary file renamed), so processes that compile the same thing at once never see
// half an entry. A cache that cannot be read or written only costs time: every failure reads as
// a miss. Entries carry a check string (what their key was made from, hashed again with another
// seed) and the hash of their bytes, so a damaged entry or a key collision is a miss too.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace loom::runtime {

inline constexpr uint64_t kFnvOffsetBasis = 14695981039346656037ull;  // FNV-1a 64's offset basis

// FNV-1a of `text` (64 bits, 16 hex digits): stable across runs, builds and machines.
std::string content_hash(std::string_view text, uint64_t seed = kFnvOffsetBasis);
// A digest of a large binary, 8 bytes a step (hex, as content_hash).
std::string binary_digest(std::string_view bytes);

// The directory of the cache `what` ("kernels", "cuda"): the environment variable `env_var` when
// set ("off" disables the cache: an empty path), else $XDG_CACHE_HOME/loom/<what>, else
// ~/.cache/loom/<what>; empty when none of these exists.
std::filesystem::path cache_directory(const char* env_var, const char* what);

// The bytes of entry `file`, if it exists, is intact and was stored with the same `check`.
// A hit marks the entry as recently used (its modification time), for trim_cache.
std::optional<std::string> read_cache_entry(const std::filesystem::path& file, std::string_view check);
// Stores `bytes` as entry `file` (creating its directory); false if it could not.
bool write_cache_entry(const std::filesystem::path& file, std::string_view bytes, std::string_view check);
// Writes `bytes` to `file` through a temporary file in the same directory and a rename; false if
// it could not (nothing is left behind).
bool write_file_atomically(const std::filesystem::path& file, std::string_view bytes);
// Removes the least recently used entries of `dir` (files ending in `suffix`) until they take at
// most `max_bytes` (down to 3/4 of it, so a full cache is not trimmed on every store), and the
// temporary files of writers that died (over an hour old).
void trim_cache(const std::filesystem::path& dir, const std::string& suffix, uint64_t max_bytes);

}  // namespace loom::runtime
