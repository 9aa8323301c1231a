// Blinding random numbers: SHA-256, numpy's SeedSequence/PCG64/ziggurat, docs/model.md "Blinding".
#include "rabbit/model/blinding.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace rabbit {
namespace {

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(to_hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(to_hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Two-block padding (56 bytes) and a multi-block message.
  EXPECT_EQ(to_hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(to_hex(sha256(std::string(200, 'a'))),
            "c2a908d98f5df987ade41b5fce213067efbcc21ef2240212a41e54b5e7c28ae5");
}

TEST(SeedSequence, MatchesNumpyGenerateState) {
  // numpy.random.SeedSequence(12345).generate_state(4, numpy.uint64)
  const auto s = seed_sequence_state({12345u});
  EXPECT_EQ(s[0], 0xb5ae6482a03d837cULL);
  EXPECT_EQ(s[1], 0xbbe2996ffa1f7a2fULL);
  EXPECT_EQ(s[2], 0x64e39a9f37158f94ULL);
  EXPECT_EQ(s[3], 0x3ebb0f96a013fd73ULL);
  // SeedSequence(2**200 + 7): 7 words, the extra words go through the second mixing loop.
  const auto t = seed_sequence_state({7u, 0u, 0u, 0u, 0u, 0u, 256u});
  EXPECT_EQ(t[0], 0xd1e8fce188c53a56ULL);
  EXPECT_EQ(t[1], 0x7f7bb03f2e264c34ULL);
  EXPECT_EQ(t[2], 0xe730fb59b1a5e416ULL);
  EXPECT_EQ(t[3], 0xac073ab38694a5f6ULL);
}

TEST(Pcg64, MatchesNumpyRawAndDouble) {
  Pcg64 a(seed_sequence_state({12345u}));
  EXPECT_EQ(a.next64(), 0x3a32b18db2ffc19dULL);
  Pcg64 b(seed_sequence_state({12345u}));
  EXPECT_EQ(b.next_double(), 0.22733602246716966);
}

TEST(StandardNormal, MatchesNumpyStream) {
  // numpy.random.Generator(PCG64(SeedSequence(12345))).standard_normal(...)
  Pcg64 rng(seed_sequence_state({12345u}));
  const double first[5] = {-1.4238250364546312, 1.2637284581291104, -0.8706617379590857, -0.2591732349343976,
                           -0.07534330701052097};
  double sum = 0.0;
  for (int i = 0; i < 5; ++i) {
    const double z = numpy_standard_normal(rng);
    EXPECT_EQ(z, first[i]) << "deviate " << i;
    sum += z;
  }
  // 200 000 deviates exercise the wedge and tail branches; deviate 1846 is a tail draw.
  double tail = 0.0, last = 0.0;
  for (int i = 5; i < 200000; ++i) {
    const double z = numpy_standard_normal(rng);
    if (i == 1846) tail = z;
    sum += z;
    last = z;
  }
  EXPECT_EQ(tail, 3.7210978113806847);
  EXPECT_EQ(last, -0.40256862774352536);
  EXPECT_EQ(sum, 362.6637981439926);
}

TEST(BlindingValue, AppendixAVectorsBitExact) {
  struct Vector {
    const char* seed;
    double value;
    double value_data;
  };
  const Vector vectors[] = {
      {"sig", 3.131282636264015, 0.48322711247430955},
      {"signal", 3.7330272691551154, -10.391037341546205},
      {"mu", 4.607687392641438, 0.3417190772446079},
      {"alphaS", -0.5812308537937548, -8.855941155483354},
      {"massShift", -2.6953939613193025, -0.19347226388747016},
  };
  for (const auto& v : vectors) {
    EXPECT_EQ(blinding_value(v.seed), v.value) << v.seed;
    EXPECT_EQ(blinding_value(std::string(v.seed) + "_data"), v.value_data) << v.seed << "_data";
  }
}

}  // namespace
}  // namespace rabbit
