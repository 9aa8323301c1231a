#pragma once
// Blinding random numbers (docs/model.md "Blinding", Appendix A): bit-exact re-implementation of
//   5 · numpy.random.default_rng(SeedSequence(int(sha256(seed).hexdigest(), 16))).standard_normal()
// from SHA-256, numpy's SeedSequence, PCG64 and numpy's 256-layer ziggurat.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rabbit {

/// SHA-256 digest of the bytes.
std::array<uint8_t, 32> sha256(std::string_view bytes);
/// Lower-case hex of a digest.
std::string to_hex(const std::array<uint8_t, 32>& digest);

/// numpy's SeedSequence(entropy).generate_state(4, uint64) for an entropy integer given as
/// 32-bit words, least significant first (Appendix A.1–A.3).
std::array<uint64_t, 4> seed_sequence_state(const std::vector<uint32_t>& entropy_words);

/// numpy's PCG64 (128-bit LCG, XSL-RR output), seeded like numpy from a 4-word state (A.4).
class Pcg64 {
 public:
  explicit Pcg64(const std::array<uint64_t, 4>& seed_state);
  uint64_t next64();
  double next_double();

 private:
  void step();
  unsigned __int128 state_ = 0;
  unsigned __int128 inc_ = 0;
};

/// numpy's Generator.standard_normal (ziggurat, A.5).
double numpy_standard_normal(Pcg64& rng);

/// V(seed) = 5 · Z with Z the first standard-normal deviate seeded from SHA-256(seed) (docs/model.md
/// "Blinding").
double blinding_value(std::string_view seed_bytes);

}  // namespace rabbit
