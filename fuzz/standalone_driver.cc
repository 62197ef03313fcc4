// A main() for the fuzz targets where libFuzzer is not available (g++ builds,
// CI): runs the target over every file of the given corpus directories or
// files, then over N seeded random mutations of them (bit flips, byte
// changes, insertions, deletions, truncations, splices, repeated chunks).
//
//   fuzz_protocol_smoke [--mutations N] [--seed S] [--max-seconds T] CORPUS...
//
// A crash aborts the process (the sanitizers, when on, say where); the input
// that did it is written to ./crash-standalone-<target> first.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::string> g_inputs_seen_paths;
const std::string* g_current = nullptr;
std::string g_crash_name = "crash-standalone";

void SaveCurrent() {
  if (!g_current) return;
  std::ofstream out(g_crash_name, std::ios::binary);
  out.write(g_current->data(), static_cast<std::streamsize>(g_current->size()));
}

void OnAbort(int sig) {
  SaveCurrent();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void Run(const std::string& input) {
  g_current = &input;
  // An owned copy sized exactly: ASan sees reads past the end.
  std::vector<uint8_t> copy(input.begin(), input.end());
  static uint8_t empty = 0;  // libFuzzer passes a valid pointer for an empty input, too
  LLVMFuzzerTestOneInput(copy.empty() ? &empty : copy.data(), copy.size());
  g_current = nullptr;
}

void Collect(const std::string& path, std::vector<std::string>* files) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::exit(2);
  }
  if (!S_ISDIR(st.st_mode)) {
    files->push_back(path);
    return;
  }
  DIR* d = ::opendir(path.c_str());
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& n : names) Collect(path + "/" + n, files);
}

std::string Mutate(const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); };
  std::string s = corpus.empty() ? std::string() : corpus[pick(corpus.size())];
  const int rounds = 1 + static_cast<int>(rng() % 8);
  for (int r = 0; r < rounds; ++r) {
    switch (rng() % 9) {
      case 0:  // flip a bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1:  // random byte
        if (!s.empty()) s[pick(s.size())] = static_cast<char>(rng());
        break;
      case 2:  // interesting values in a 1/2/4/8-byte field
        if (s.size() >= 8) {
          static const uint64_t kValues[] = {0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0xffff, 0x7fffffff, 0xffffffff,
                                             0x80000000, ~0ull, 0x8000000000000000ull, 64, 4096};
          const uint64_t v = kValues[rng() % (sizeof kValues / sizeof kValues[0])];
          const size_t width = size_t{1} << (rng() % 4);
          const size_t at = pick(s.size() - width + 1);
          std::memcpy(&s[at], &v, width);
        }
        break;
      case 3:  // insert random bytes
        s.insert(pick(s.size() + 1), std::string(1 + rng() % 16, static_cast<char>(rng())));
        break;
      case 4:  // delete a range
        if (!s.empty()) {
          const size_t at = pick(s.size());
          s.erase(at, 1 + pick(std::min<size_t>(64, s.size() - at)));
        }
        break;
      case 5:  // truncate
        s.resize(pick(s.size() + 1));
        break;
      case 6:  // splice with another input
        if (!corpus.empty()) {
          const std::string& o = corpus[pick(corpus.size())];
          s = s.substr(0, pick(s.size() + 1)) + o.substr(pick(o.size() + 1));
        }
        break;
      case 7:  // repeat a chunk
        if (!s.empty()) {
          const size_t at = pick(s.size());
          const std::string chunk = s.substr(at, 1 + pick(32));
          s.insert(pick(s.size() + 1), chunk);
        }
        break;
      default:  // copy a word over another (pointers, lengths)
        if (s.size() >= 16) {
          const size_t from = pick(s.size() / 8) * 8, to = pick(s.size() / 8) * 8;
          if (from + 8 <= s.size() && to + 8 <= s.size()) std::memcpy(&s[to], &s[from], 8);
        }
        break;
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t mutations = 2000, seed = 1;
  double max_seconds = 0;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--mutations" || a == "--seed" || a == "--max-seconds") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--mutations") mutations = std::stoull(v);
      else if (a == "--seed") seed = std::stoull(v);
      else max_seconds = std::stod(v);
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: %s [--mutations N] [--seed S] [--max-seconds T] CORPUS_DIR_OR_FILE...\n", argv[0]);
      return 0;
    } else {
      paths.push_back(a);
    }
  }
  std::string target = argv[0];
  target = target.substr(target.rfind('/') + 1);
  g_crash_name = "crash-standalone-" + target;
  std::signal(SIGABRT, OnAbort);
  std::signal(SIGSEGV, OnAbort);

  std::vector<std::string> files;
  for (const auto& p : paths) Collect(p, &files);
  std::vector<std::string> corpus;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    corpus.push_back(ss.str());
  }
  const auto start = std::chrono::steady_clock::now();
  for (const auto& c : corpus) Run(c);
  Run(std::string());
  std::mt19937_64 rng(seed);
  uint64_t done = 0;
  for (; done < mutations; ++done) {
    if (max_seconds > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > max_seconds)
      break;
    Run(Mutate(corpus, rng));
  }
  std::printf("%s: %zu corpus inputs and %llu mutations (seed %llu) in %.1f s, no crash\n", target.c_str(),
              corpus.size(), static_cast<unsigned long long>(done), static_cast<unsigned long long>(seed),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}
