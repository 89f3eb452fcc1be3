// Text that tokenizes like chat: random common English words, for load
// tests that need prompts of "about N words" (the in-process engine driver
// and the HTTP load generator draw from the same list, so their prompts
// compare).
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace swiftlet::loadgen {

// `n` words drawn uniformly from a fixed list of 80 short, common English
// words, separated by single spaces (empty when n <= 0). Most are one token
// in Llama- and GPT-2-family vocabularies.
std::string RandomWords(std::mt19937_64& rng, int64_t n);

}  // namespace swiftlet::loadgen
