// Bad input never crashes: well over a thousand seeded variants of real shards (the silero-vad
// corpus in both forms and two LLM fixture packages) go through the library pipeline
// in-process. Each variant must end in a clean result or in an error whose code is an input
// error (format, IO, unsupported, shape) and whose message names the mutated file; never a
// crash, a sanitizer report, an internal error or a hang. Variants that break something the
// pipeline reads must give an error; variants that only touch bytes the format says readers
// ignore must not.
#include "robustness/mutations.h"
#include "robustness/pipeline.h"
#include "robustness/variants.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

namespace sg::robustness {
namespace {

namespace fs = std::filesystem;

// A variant that takes longer than this fails; one that takes far longer is taken for a hang
// and ends the process, naming the variant, so CI does not wait for its own timeout.
constexpr double kVariantSeconds = 5.0;
constexpr int kHangSeconds = 120;

struct ModelSource {
  std::string rel;  // under tests/data
  bool package;
};

const std::vector<ModelSource>& models() {
  static const std::vector<ModelSource> list = {
      {"corpus/silero-vad/silero-vad-unified-v6.0.0.mlmodelc", false},
      {"corpus/silero-vad/unified_int8.mlmodelc", false},
      {"corpus/silero-vad/unified_palette_4bit.mlmodelc", false},
      {"corpus/silero-vad/silero-vad-unified-v6.0.0.mlpackage", true},
      {"corpus/silero-vad/unified_int8.mlpackage", true},
      {"corpus/silero-vad/unified_palette_4bit.mlpackage", true},
      {"fixtures/llm/attention_int4blk.mlpackage", true},
      {"fixtures/llm/attention_lut4.mlpackage", true},
  };
  return list;
}

std::string source_dir(const ModelSource& m) { return std::string(SG_TEST_DATA_DIR) + "/" + m.rel; }
std::string model_name(const ModelSource& m) { return fs::path(m.rel).filename().string(); }

enum class FileKind { kWeightBin, kModelMil, kMetadata, kModelProto, kManifest };

std::string rel_file(const ModelSource& m, FileKind kind) {
  switch (kind) {
    case FileKind::kWeightBin:
      return m.package ? "Data/com.apple.CoreML/weights/weight.bin" : "weights/weight.bin";
    case FileKind::kModelMil: return "model.mil";
    case FileKind::kMetadata: return "metadata.json";
    case FileKind::kModelProto: return "Data/com.apple.CoreML/model.mlmodel";
    case FileKind::kManifest: return "Manifest.json";
  }
  return "";
}

bool applies(const ModelSource& m, FileKind kind) {
  switch (kind) {
    case FileKind::kWeightBin: return true;
    case FileKind::kModelMil:
    case FileKind::kMetadata: return !m.package;
    case FileKind::kModelProto:
    case FileKind::kManifest: return m.package;
  }
  return false;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes through a new file and a rename, so a mapping of the old file (none should be left,
// but a leak must not turn into SIGBUS here) keeps its bytes.
void write_bytes(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".sg-robustness-tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  fs::rename(tmp, path);
}

// The blob metadata offsets the pristine program references.
std::set<uint64_t> referenced_offsets(const std::string& shard_dir) {
  std::set<uint64_t> out;
  auto shard = Shard::open(shard_dir);
  if (!shard.is_ok()) return out;
  for (const BlobRef& ref : blob_refs((*shard)->program())) out.insert(ref.offset);
  return out;
}

std::vector<Variant> variants_for(const ModelSource& m, FileKind kind, const std::string& bytes,
                                  const std::string& dir) {
  const std::string file = rel_file(m, kind);
  const uint64_t seed = seed_of(model_name(m) + "/" + file);
  switch (kind) {
    case FileKind::kWeightBin: {
      // The silero packages hold the same weight.bin bytes as their .mlmodelc twins: one
      // record each is enough there to cover the protobuf path to the blobs.
      const bool twin = m.package && m.rel.rfind("corpus/", 0) == 0;
      return weight_bin_variants(file, bytes, referenced_offsets(dir), seed, twin ? 1 : 2);
    }
    case FileKind::kModelMil: return model_mil_variants(file, bytes, seed);
    case FileKind::kMetadata: return metadata_variants(file, bytes, seed);
    case FileKind::kModelProto: return model_proto_variants(file, bytes, seed);
    case FileKind::kManifest: return manifest_variants(file, bytes, seed);
  }
  return {};
}

// SG_ROBUSTNESS_ROUNDS=N adds N rounds of extra random edits per file, each round with its
// own seed (exploratory runs; the default run is the fixed list above).
std::vector<Variant> extra_variants(const ModelSource& m, FileKind kind, const std::string& bytes) {
  const char* env = std::getenv("SG_ROBUSTNESS_ROUNDS");
  const int rounds = env ? std::atoi(env) : 0;
  std::vector<Variant> out;
  const std::string file = rel_file(m, kind);
  // Weight data is never interpreted: aim blob files at the header and the records.
  uint64_t limit = bytes.size();
  if (kind == FileKind::kWeightBin) {
    limit = 0;
    for (const BlobRecord& r : blob_records(bytes)) limit = std::max(limit, r.offset + 64);
  }
  for (int r = 1; r <= rounds; ++r) {
    auto more = random_variants(file, bytes, seed_of(model_name(m) + "/" + file + "#" + std::to_string(r)),
                                limit, 40);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

// Ends the process when a variant runs for kHangSeconds, after naming it.
class Watchdog {
 public:
  Watchdog() : thread_([this] { loop(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void arm(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    what_ = what;
    deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(kHangSeconds);
    armed_ = true;
    cv_.notify_all();
  }
  void disarm() {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = false;
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      if (armed_ && std::chrono::steady_clock::now() >= deadline_) {
        std::fprintf(stderr, "robustness: variant still running after %d s (a hang): %s\n",
                     kHangSeconds, what_.c_str());
        std::fflush(stderr);
        std::_Exit(3);
      }
      cv_.wait_for(lock, std::chrono::milliseconds(500));
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool armed_ = false;
  std::string what_;
  std::chrono::steady_clock::time_point deadline_;
  std::thread thread_;
};

bool allowed_code(ErrorCode code) {
  return code == ErrorCode::kFormat || code == ErrorCode::kIO ||
         code == ErrorCode::kUnsupported || code == ErrorCode::kShape ||
         code == ErrorCode::kMissingParameter || code == ErrorCode::kInvalidProgram;
}

struct Tally {
  int variants = 0;
  int with_error = 0;
  int clean = 0;
  double seconds = 0;
  std::vector<std::string> violations;
};

class Mutation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new fs::path(fs::temp_directory_path() /
                         ("sg_robustness_" + std::to_string(::getpid())));
    fs::remove_all(*root_);
    for (const ModelSource& m : models()) {
      fs::create_directories(*root_);
      fs::copy(source_dir(m), *root_ / model_name(m), fs::copy_options::recursive);
    }
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(*root_, ec);
    delete root_;
    root_ = nullptr;
  }

  static std::string work_dir(const ModelSource& m) { return (*root_ / model_name(m)).string(); }

  // Runs every variant of one kind of file over every model that has such a file.
  static Tally run_kind(FileKind kind) {
    Tally tally;
    Watchdog watchdog;
    for (const ModelSource& m : models()) {
      if (!applies(m, kind)) continue;
      const std::string dir = work_dir(m);
      const std::string path = dir + "/" + rel_file(m, kind);
      const std::string pristine = read_bytes(path);
      std::vector<Variant> list = variants_for(m, kind, pristine, dir);
      std::vector<Variant> extra = extra_variants(m, kind, pristine);
      list.insert(list.end(), extra.begin(), extra.end());
      for (const Variant& v : list) {
        run_variant(m, dir, path, pristine, v, watchdog, tally);
      }
    }
    return tally;
  }

  static void run_variant(const ModelSource& m, const std::string& dir, const std::string& path,
                          const std::string& pristine, const Variant& v, Watchdog& watchdog,
                          Tally& tally) {
    const std::string name = model_name(m) + "/" + v.file + ": " + v.label;
    std::optional<std::string> bytes = mutate(pristine, v.mutation);
    if (bytes) {
      write_bytes(path, *bytes);
    } else {
      fs::remove(path);
    }
    watchdog.arm(name);
    const auto start = std::chrono::steady_clock::now();
    std::vector<StepError> errors = run_pipeline(dir);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    watchdog.disarm();
    write_bytes(path, pristine);

    // SG_ROBUSTNESS_VERBOSE=1 lists every variant with its outcome (to review what passes).
    static const bool verbose = std::getenv("SG_ROBUSTNESS_VERBOSE") != nullptr;
    if (verbose) {
      std::printf("%s -> %s\n", name.c_str(),
                  errors.empty() ? "clean"
                                 : (errors[0].step + ": " + errors[0].status.to_string()).c_str());
    }
    ++tally.variants;
    tally.seconds += seconds;
    (errors.empty() ? tally.clean : tally.with_error)++;
    const std::string base = fs::path(v.file).filename().string();
    for (const StepError& e : errors) {
      if (!allowed_code(e.status.code())) {
        tally.violations.push_back(name + ": " + e.step + " returned " +
                                   error_code_name(e.status.code()) + ": " + e.status.message());
      } else if (e.status.message().find(base) == std::string::npos) {
        tally.violations.push_back(name + ": " + e.step + ": message does not name " + base +
                                   ": " + e.status.message());
      }
    }
    if (v.expect == Expect::kError && errors.empty()) {
      tally.violations.push_back(name + ": accepted, but the edit breaks data the program reads");
    }
    if (v.expect == Expect::kClean && !errors.empty()) {
      tally.violations.push_back(name + ": rejected, but the format lets readers ignore this (" +
                                 errors[0].step + ": " + errors[0].status.message() + ")");
    }
    if (seconds > kVariantSeconds) {
      tally.violations.push_back(name + ": took " + std::to_string(seconds) + " s");
    }
  }

  static void report(const char* what, const Tally& t, int min_variants) {
    std::printf("[ robustness ] %s: %d variants, %d rejected, %d clean, %.2f s\n", what,
                t.variants, t.with_error, t.clean, t.seconds);
    EXPECT_GE(t.variants, min_variants) << what;
    std::string list;
    for (size_t i = 0; i < t.violations.size() && i < 40; ++i) list += t.violations[i] + "\n";
    EXPECT_TRUE(t.violations.empty())
        << t.violations.size() << " violation(s) in " << what << " variants (first 40):\n"
        << list;
  }

  static fs::path* root_;
};

fs::path* Mutation::root_ = nullptr;

// The baseline: unmutated copies go through the pipeline without any error, so every error
// a variant produces comes from its edit.
TEST_F(Mutation, PristineModelsPassThePipeline) {
  for (const ModelSource& m : models()) {
    std::vector<StepError> errors = run_pipeline(work_dir(m));
    for (const StepError& e : errors) {
      ADD_FAILURE() << model_name(m) << ": " << e.step << ": " << e.status.to_string();
    }
    EXPECT_FALSE(referenced_offsets(work_dir(m)).empty()) << model_name(m) << " uses no blob";
  }
}

TEST_F(Mutation, VariantListsAreSeededAndLargeEnough) {
  size_t total = 0;
  for (const ModelSource& m : models()) {
    for (FileKind kind : {FileKind::kWeightBin, FileKind::kModelMil, FileKind::kMetadata,
                          FileKind::kModelProto, FileKind::kManifest}) {
      if (!applies(m, kind)) continue;
      const std::string bytes = read_bytes(work_dir(m) + "/" + rel_file(m, kind));
      ASSERT_FALSE(bytes.empty()) << model_name(m) << "/" << rel_file(m, kind);
      auto a = variants_for(m, kind, bytes, work_dir(m));
      auto b = variants_for(m, kind, bytes, work_dir(m));
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].label, b[i].label);
        EXPECT_EQ(mutate(bytes, a[i].mutation), mutate(bytes, b[i].mutation)) << a[i].label;
        // Every variant really changes the file.
        EXPECT_NE(mutate(bytes, a[i].mutation), std::optional<std::string>(bytes))
            << model_name(m) << "/" << a[i].file << ": " << a[i].label;
      }
      total += a.size();
    }
  }
  EXPECT_GE(total, 1000u);
}

TEST_F(Mutation, WeightBinVariants) { report("weight.bin", run_kind(FileKind::kWeightBin), 500); }
TEST_F(Mutation, ModelMilVariants) { report("model.mil", run_kind(FileKind::kModelMil), 250); }
TEST_F(Mutation, MetadataJsonVariants) {
  report("metadata.json", run_kind(FileKind::kMetadata), 60);
}
TEST_F(Mutation, ModelMlmodelVariants) {
  report("model.mlmodel", run_kind(FileKind::kModelProto), 300);
}
TEST_F(Mutation, ManifestJsonVariants) {
  report("Manifest.json", run_kind(FileKind::kManifest), 100);
}

// The scanners the variants rely on find what they should in the pristine files, so the
// targeted variants do hit headers, records, offsets, dims and length prefixes.
TEST(MutationScanners, FindRecordsOffsetsDimsAndPrefixes) {
  const std::string dir = std::string(SG_TEST_DATA_DIR) + "/corpus/silero-vad/unified_int8.mlmodelc";
  const std::string blob = read_bytes(dir + "/weights/weight.bin");
  ASSERT_GE(blob.size(), 128u);
  EXPECT_EQ(read_le32(blob, 4), 2u);  // storage version
  std::vector<BlobRecord> records = blob_records(blob);
  ASSERT_EQ(records.size(), read_le32(blob, 0));
  EXPECT_EQ(records[0].offset, 64u);
  EXPECT_EQ(records[0].data_offset, 128u);
  EXPECT_EQ(read_le32(blob, records.back().offset), 0xDEADBEEFu);

  const std::string mil = read_bytes(dir + "/model.mil");
  std::vector<TextSpan> offsets = blobfile_offsets(mil);
  ASSERT_FALSE(offsets.empty());
  EXPECT_EQ(mil.substr(offsets[0].pos, offsets[0].len), "64");
  EXPECT_FALSE(tensor_dims(mil, true).empty());
  EXPECT_GT(tensor_dims(mil, false).size(), tensor_dims(mil, true).size());

  const std::string proto = read_bytes(std::string(SG_TEST_DATA_DIR) +
                                       "/corpus/silero-vad/unified_int8.mlpackage/Data/"
                                       "com.apple.CoreML/model.mlmodel");
  std::vector<LengthPrefix> prefixes = length_prefixes(proto);
  bool program = false;
  for (const LengthPrefix& p : prefixes) program |= p.depth == 0 && p.field == 502;
  EXPECT_TRUE(program);
  EXPECT_GT(prefixes.size(), 100u);
  EXPECT_EQ(varint_of_width(300, 2), std::optional<std::string>("\xAC\x02"));
  EXPECT_EQ(varint_of_width(1, 3), std::optional<std::string>(std::string("\x81\x80\x00", 3)));
  EXPECT_EQ(varint_of_width(128, 1), std::nullopt);
}

}  // namespace
}  // namespace sg::robustness
