#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "idx.hpp"

namespace fs = std::filesystem;
using gwtrain::DataError;

namespace {

std::vector<uint8_t> header(uint8_t type, std::vector<uint32_t> dims) {
  std::vector<uint8_t> h{0, 0, type, uint8_t(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) h.push_back(uint8_t(d >> s));
  return h;
}

std::vector<uint8_t> idx(std::vector<uint32_t> dims, uint8_t fill = 7) {
  std::vector<uint8_t> bytes = header(0x08, dims);
  size_t n = 1;
  for (uint32_t d : dims) n *= d;
  for (size_t i = 0; i < n; ++i) bytes.push_back(uint8_t((i * 31 + fill) % 10));
  return bytes;
}

class IdxFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gw_idx_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::vector<uint8_t>& bytes, bool gzip) {
    const std::string path = (dir_ / (gzip ? name + ".gz" : name)).string();
    if (gzip) {
      gzFile f = gzopen(path.c_str(), "wb");
      gzwrite(f, bytes.data(), unsigned(bytes.size()));
      gzclose(f);
    } else {
      std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    }
    return path;
  }

  // A complete small data set: `n` training and `m` test images of 4x3.
  void write_dataset(uint32_t n, uint32_t m, bool gzip) {
    write("train-images-idx3-ubyte", idx({n, 4, 3}), gzip);
    write("train-labels-idx1-ubyte", idx({n}), gzip);
    write("t10k-images-idx3-ubyte", idx({m, 4, 3}), gzip);
    write("t10k-labels-idx1-ubyte", idx({m}), gzip);
  }

  std::string error_of(const std::string& path, uint32_t rank) {
    try {
      gwtrain::read_idx(path, rank);
    } catch (const DataError& e) {
      return e.what();
    }
    return "(no error)";
  }

  fs::path dir_;
};

TEST_F(IdxFiles, ReadsGzipAndPlainFiles) {
  for (bool gzip : {true, false}) {
    const auto bytes = idx({5, 4, 3});
    const auto a = gwtrain::read_idx(write("a", bytes, gzip), 3);
    EXPECT_EQ(a.dims, (std::vector<uint32_t>{5, 4, 3}));
    ASSERT_EQ(a.data.size(), 60u);
    EXPECT_TRUE(std::equal(a.data.begin(), a.data.end(), bytes.begin() + 16));
  }
}

TEST_F(IdxFiles, RejectsBadMagic) {
  auto bytes = idx({2, 2, 2});
  bytes[0] = 1;
  EXPECT_NE(error_of(write("m", bytes, true), 3).find("bad magic"), std::string::npos);
  bytes = idx({2, 2, 2});
  bytes[2] = 0x0D;  // float elements
  EXPECT_NE(error_of(write("t", bytes, true), 3).find("element type 0x0d"), std::string::npos);
}

TEST_F(IdxFiles, RejectsWrongDimensions) {
  const std::string p = write("d", idx({2, 2}), false);
  EXPECT_NE(error_of(p, 3).find("2 dimensions where 3 are expected"), std::string::npos);
  EXPECT_NE(error_of(write("z", header(0x08, {0, 4, 4}), false), 3).find("dimension 0 is 0"), std::string::npos);
}

TEST_F(IdxFiles, RejectsTruncatedAndOverlongFiles) {
  auto bytes = idx({3, 4, 4});
  bytes.resize(bytes.size() - 1);
  EXPECT_NE(error_of(write("t", bytes, true), 3).find("truncated"), std::string::npos);
  const auto h = header(0x08, {3, 4, 4});
  EXPECT_NE(error_of(write("h", std::vector<uint8_t>(h.begin(), h.begin() + 9), true), 3).find("header ends"),
            std::string::npos);
  EXPECT_NE(error_of(write("e", {0, 0}, false), 3).find("shorter than its 4-byte magic"), std::string::npos);
  bytes = idx({3, 4, 4});
  bytes.push_back(0);
  EXPECT_NE(error_of(write("o", bytes, false), 3).find("more data after"), std::string::npos);
  // Every message says what to do.
  EXPECT_NE(error_of(write("o2", bytes, false), 3).find("--data"), std::string::npos);
}

TEST_F(IdxFiles, RejectsHugeDimensionsWithoutAllocating) {
  EXPECT_NE(error_of(write("big", header(0x08, {60000, 60000, 60000}), false), 3).find("more than 2^31"), std::string::npos);
}

TEST_F(IdxFiles, LoadsADataSetDirectory) {
  write_dataset(6, 2, true);
  const auto d = gwtrain::load_fashion_mnist(dir_.string());
  EXPECT_EQ(d.train.count, 6u);
  EXPECT_EQ(d.test.count, 2u);
  EXPECT_EQ(d.train.pixels(), 12u);
  EXPECT_EQ(d.train.images.size(), 72u);
  EXPECT_EQ(d.test.labels.size(), 2u);
}

TEST_F(IdxFiles, MissingDataSetNamesThePackageAndTheOption) {
  for (const std::string& dir : {(dir_ / "nowhere").string(), dir_.string()}) {
    try {
      gwtrain::load_fashion_mnist(dir);
      FAIL() << "no error for " << dir;
    } catch (const DataError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("dataset-fashion-mnist"), std::string::npos) << m;
      EXPECT_NE(m.find("--data"), std::string::npos) << m;
    }
  }
}

TEST_F(IdxFiles, RejectsImagesAndLabelsThatDisagree) {
  write_dataset(6, 2, false);
  write("train-labels-idx1-ubyte", idx({5}), false);
  EXPECT_THROW(
      {
        try {
          gwtrain::load_fashion_mnist(dir_.string());
        } catch (const DataError& e) {
          EXPECT_NE(std::string(e.what()).find("6 images but"), std::string::npos) << e.what();
          throw;
        }
      },
      DataError);
  write_dataset(6, 2, false);
  auto labels = idx({6});
  labels.back() = 12;
  write("train-labels-idx1-ubyte", labels, false);
  try {
    gwtrain::load_fashion_mnist(dir_.string());
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("labels are 0..9"), std::string::npos) << e.what();
  }
}

}  // namespace
