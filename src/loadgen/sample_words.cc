#include "loadgen/sample_words.h"

#include <iterator>

namespace swiftlet::loadgen {
namespace {

constexpr const char* kWords[] = {
    "the", "people", "stream", "tonight", "really", "good", "music", "watch", "from", "city",
    "love", "this", "song", "please", "play", "again", "where", "are", "you", "today",
    "great", "game", "team", "win", "hello", "everyone", "morning", "thank", "for", "coming",
    "what", "time", "is", "it", "there", "nice", "view", "beautiful", "weather", "here",
    "can", "we", "see", "more", "of", "that", "dance", "next", "week", "show",
    "so", "funny", "laugh", "best", "part", "first", "again", "friends", "family", "home",
    "food", "looks", "delicious", "recipe", "share", "how", "long", "did", "take", "make",
    "new", "video", "soon", "wait", "excited", "happy", "birthday", "congratulations", "well", "done"};

}  // namespace

std::string RandomWords(std::mt19937_64& rng, int64_t n) {
  std::string s;
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) s += ' ';
    s += kWords[rng() % std::size(kWords)];
  }
  return s;
}

}  // namespace swiftlet::loadgen
