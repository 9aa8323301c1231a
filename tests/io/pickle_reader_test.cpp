// The non-executing pickle reader and the axis/meta interpretation on hand-made byte streams.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "io/reader_test_support.hpp"
#include "rabbit/io/meta_info.hpp"
#include "rabbit/io/pickle.hpp"

namespace rabbit {
namespace {

using pickle::Kind;
using test::PickleBytes;

std::string le_doubles(const std::vector<double>& v) {
  std::string s(v.size() * 8, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

std::string le_ints32(const std::vector<int32_t>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

AxisInfo parse_axis(PickleBytes& p) {
  p.stop();
  const auto root = pickle::parse(p.bytes);
  return io::interpret_axis(*root);
}

TEST(PickleReader, ScalarsAndContainers) {
  PickleBytes p;
  p.proto(2).empty_dict().mark();
  p.str("i1").integer(200).str("i2").integer(60000).str("neg").integer(-5).str("big").integer(int64_t{1}
                                                                                              << 40);
  p.str("f").binfloat(-2.5).str("t").boolean(true).str("n").none();
  p.str("l").empty_list().mark().integer(1).integer(2).appends();
  p.str("tup").integer(1).str("a").tuple2();
  p.str("bytes").short_binbytes("xyz");
  p.setitems().stop();
  const auto v = pickle::parse(p.bytes);
  ASSERT_TRUE(v->is(Kind::dict));
  EXPECT_EQ(v->get("i1")->integer, 200);
  EXPECT_EQ(v->get("i2")->integer, 60000);
  EXPECT_EQ(v->get("neg")->integer, -5);
  EXPECT_EQ(v->get("big")->integer, int64_t{1} << 40);
  EXPECT_EQ(v->get("f")->floating, -2.5);
  EXPECT_TRUE(v->get("t")->boolean);
  EXPECT_TRUE(v->get("n")->is(Kind::none));
  ASSERT_EQ(v->get("l")->items.size(), 2u);
  EXPECT_EQ(v->get("l")->items[1]->integer, 2);
  EXPECT_EQ(v->get("tup")->items[1]->text, "a");
  EXPECT_EQ(v->get("bytes")->text, "xyz");
  EXPECT_EQ(v->get("missing"), nullptr);
}

TEST(PickleReader, Long1NegativeAndBigIntegers) {
  PickleBytes p;
  p.proto(2).mark();
  p.op(0x8a).op(2).op(0x00).op(0xff);             // LONG1 -256
  p.op(0x8a).op(9).le(0, 8).op(1);                // 2^64: does not fit
  p.op(0x8a).op(9).le(~uint64_t{0}, 8).op(0xff);  // -1 with sign-extension byte
  p.tuple().stop();
  const auto v = pickle::parse(p.bytes);
  EXPECT_EQ(v->items[0]->integer, -256);
  EXPECT_TRUE(v->items[1]->big_integer);
  EXPECT_FALSE(v->items[2]->big_integer);
  EXPECT_EQ(v->items[2]->integer, -1);
}

TEST(PickleReader, MemoSharesObjectsAndMutationsAreVisible) {
  PickleBytes p;
  // Protocol 5: [s, s] where s is memoised, plus a dict memoised with BINPUT then mutated.
  p.proto(5).frame(5).empty_list().memoize().mark();
  p.str("name").memoize();  // memo 1
  p.binget(1);
  p.empty_dict().binput(7);
  p.binget(7).str("k").integer(3).setitem().op('0');  // mutate through the memo, then POP it
  p.appends().stop();
  const auto v = pickle::parse(p.bytes);
  ASSERT_EQ(v->items.size(), 3u);
  EXPECT_EQ(v->items[0], v->items[1]);  // same node
  EXPECT_EQ(v->items[2]->get("k")->integer, 3);
}

TEST(PickleReader, GlobalTextFormAndNarfAlias) {
  PickleBytes p;
  p.proto(2)
      .global("narf.ioutils", "H5Path")
      .empty_tuple()
      .newobj()
      .empty_dict()
      .str("path")
      .str("/x")
      .setitem()
      .build()
      .stop();
  const auto v = pickle::parse(p.bytes);
  ASSERT_TRUE(v->is(Kind::object));
  EXPECT_EQ(v->cls->qualified_name(), "wums.ioutils.H5Path");
  EXPECT_EQ(v->state->get("path")->text, "/x");
}

TEST(PickleReader, UnknownReduceBecomesOpaqueObject) {
  PickleBytes p;
  p.proto(4).stack_global("os", "system").str("rm -rf /").tuple1().reduce().stop();
  const auto v = pickle::parse(p.bytes);
  ASSERT_TRUE(v->is(Kind::object));  // never executed, only recorded
  EXPECT_EQ(v->cls->qualified_name(), "os.system");
  EXPECT_EQ(v->args->items[0]->text, "rm -rf /");
}

TEST(PickleReader, NumpyFrombufferArrays) {
  PickleBytes p;
  p.proto(5).mark();
  p.ndarray_frombuffer(le_doubles({0.5, 1.5, 4.0}), "f8", '<', {3});
  p.ndarray_frombuffer(le_ints32({-3, 7}), "i4", '<', {2}, "numpy._core.numeric");
  // Big-endian float64 array with one element 2.0.
  p.ndarray_frombuffer(std::string("\x40\x00\x00\x00\x00\x00\x00\x00", 8), "f8", '>', {1});
  p.tuple().stop();
  const auto v = pickle::parse(p.bytes);
  EXPECT_EQ(pickle::ndarray_to_doubles(*v->items[0]), (std::vector<double>{0.5, 1.5, 4.0}));
  EXPECT_EQ(pickle::ndarray_to_ints(*v->items[1]), (std::vector<int64_t>{-3, 7}));
  EXPECT_EQ(pickle::ndarray_to_doubles(*v->items[2]), (std::vector<double>{2.0}));
}

TEST(PickleReader, NumpyReconstructProtocol2Form) {
  PickleBytes p;
  p.proto(2).global("numpy.core.multiarray", "_reconstruct");
  p.global("numpy", "ndarray").integer(0).tuple1().short_binbytes("b").tuple3().reduce();
  p.mark().integer(1).integer(2).tuple1();
  p.global("numpy", "dtype").str("f8").boolean(false).boolean(true).tuple3().reduce();
  p.mark().integer(3).str("<").none().none().none().integer(-1).integer(-1).integer(0).tuple().build();
  p.boolean(false);
  // raw data as _codecs.encode(latin-1 text, "latin1"): 1.0 and 2.0 have only bytes < 0x80 and 0xf0
  p.global("_codecs", "encode");
  const std::string one("\x00\x00\x00\x00\x00\x00\xf0\x3f", 8), two("\x00\x00\x00\x00\x00\x00\x00\x40", 8);
  std::string latin = one + two, utf8;
  for (unsigned char c : latin) {
    if (c < 0x80)
      utf8 += static_cast<char>(c);
    else {
      utf8 += static_cast<char>(0xC0 | (c >> 6));
      utf8 += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  p.str(utf8).str("latin1").tuple2().reduce();
  p.tuple().build().stop();
  const auto v = pickle::parse(p.bytes);
  ASSERT_TRUE(v->is(Kind::ndarray));
  EXPECT_EQ(pickle::ndarray_to_doubles(*v), (std::vector<double>{1.0, 2.0}));
}

TEST(PickleReader, RegularAxisEdgesAreBitExact) {
  PickleBytes p;
  p.proto(4)
      .open_axis("Regular", "regular_uoflow")
      .integer(0)
      .integer(0)
      .integer(3)
      .axis_meta("pt", "p_T")
      .binfloat(0.1)
      .binfloat(0.7 - 0.1)
      .close_axis();
  const AxisInfo a = parse_axis(p);
  EXPECT_EQ(a.kind, "regular");
  EXPECT_EQ(a.name, "pt");
  EXPECT_EQ(a.label, "p_T");
  EXPECT_EQ(a.size, 3);
  EXPECT_EQ(a.extent(), 5);
  ASSERT_EQ(a.edges.size(), 4u);
  const double delta = 0.7 - 0.1;
  for (int i = 0; i <= 3; ++i) {
    const double z = i / 3.0;
    EXPECT_EQ(a.edges[static_cast<size_t>(i)], (1.0 - z) * 0.1 + z * (0.1 + delta));
  }
}

struct FlagCase {
  std::string core;
  bool underflow, overflow, growth, circular;
};

TEST(PickleReader, RegularFlowFlagsFromCoreClass) {
  for (const FlagCase& c : {FlagCase{"regular_uoflow", true, true, false, false},
                            FlagCase{"regular_uflow", true, false, false, false},
                            FlagCase{"regular_oflow", false, true, false, false},
                            FlagCase{"regular_none", false, false, false, false},
                            FlagCase{"regular_uoflow_growth", true, true, true, false},
                            FlagCase{"regular_circular", false, true, false, true}}) {
    PickleBytes p;
    p.proto(4)
        .open_axis("Regular", c.core)
        .integer(0)
        .integer(0)
        .integer(2)
        .axis_meta("x")
        .binfloat(0)
        .binfloat(1)
        .close_axis();
    const AxisInfo a = parse_axis(p);
    EXPECT_EQ(a.underflow, c.underflow) << c.core;
    EXPECT_EQ(a.overflow, c.overflow) << c.core;
    EXPECT_EQ(a.growth, c.growth) << c.core;
    EXPECT_EQ(a.circular, c.circular) << c.core;
  }
}

TEST(PickleReader, RegularPowAndTransforms) {
  {
    PickleBytes p;
    p.proto(4)
        .open_axis("Regular", "regular_pow")
        .integer(0)
        .integer(0)
        .binfloat(2.0)
        .integer(2)
        .axis_meta("x")
        .binfloat(1.0)
        .binfloat(8.0)
        .close_axis();  // transformed space [1, 9] -> edges 1, sqrt(5), 3
    const AxisInfo a = parse_axis(p);
    ASSERT_EQ(a.edges.size(), 3u);
    EXPECT_EQ(a.edges[0], 1.0);
    EXPECT_EQ(a.edges[1], std::pow(5.0, 0.5));
    EXPECT_EQ(a.edges[2], 3.0);
    EXPECT_TRUE(a.underflow && a.overflow);
  }
  {
    PickleBytes p;
    p.proto(4)
        .open_axis("Regular", "regular_trans")
        .integer(0)
        .integer(0)
        .none()
        .none()
        .none()
        .str("log")
        .integer(2)
        .axis_meta("x")
        .binfloat(0.0)
        .binfloat(2.0)
        .close_axis();
    const AxisInfo a = parse_axis(p);
    ASSERT_EQ(a.edges.size(), 3u);
    EXPECT_EQ(a.edges[1], std::exp(1.0));
  }
}

TEST(PickleReader, VariableIntegerBooleanAxes) {
  {
    PickleBytes p;
    p.proto(5).open_axis("Variable", "variable_none").integer(0);
    p.ndarray_frombuffer(le_doubles({0.0, 0.5, 2.0}), "f8", '<', {3});
    p.axis_meta("eta").close_axis();
    const AxisInfo a = parse_axis(p);
    EXPECT_EQ(a.kind, "variable");
    EXPECT_EQ(a.size, 2);
    EXPECT_EQ(a.edges, (std::vector<double>{0.0, 0.5, 2.0}));
    EXPECT_FALSE(a.underflow || a.overflow);
  }
  {
    PickleBytes p;
    p.proto(4)
        .open_axis("Integer", "integer_growth")
        .integer(0)
        .integer(4)
        .axis_meta("n")
        .integer(-2)
        .close_axis();
    const AxisInfo a = parse_axis(p);
    EXPECT_EQ(a.kind, "integer");
    EXPECT_EQ(a.edges, (std::vector<double>{-2, -1, 0, 1, 2}));
    EXPECT_TRUE(a.growth);
    EXPECT_EQ(a.extent(), 4);
  }
  {
    PickleBytes p;
    p.proto(4).open_axis("Boolean", "boolean").integer(0).integer(2).axis_meta("b").integer(0).close_axis();
    const AxisInfo a = parse_axis(p);
    EXPECT_EQ(a.kind, "boolean");
    EXPECT_EQ(a.size, 2);
    EXPECT_EQ(a.extent(), 2);
  }
}

TEST(PickleReader, CategoryAxes) {
  {
    PickleBytes p;
    p.proto(4)
        .open_axis("StrCategory", "category_str")
        .integer(0)
        .integer(2)
        .str("ee")
        .str("mumu")
        .axis_meta("flav")
        .close_axis();
    const AxisInfo a = parse_axis(p);
    EXPECT_EQ(a.kind, "category_str");
    EXPECT_EQ(a.categories_str, (std::vector<std::string>{"ee", "mumu"}));
    EXPECT_TRUE(a.overflow);
    EXPECT_EQ(a.extent(), 3);
  }
  {
    PickleBytes p;
    p.proto(5).open_axis("IntCategory", "category_int_growth", "boost_histogram.axis").integer(0);
    p.ndarray_frombuffer(le_ints32({3, 11, 7}), "i4", '<', {3});
    p.empty_dict().close_axis();
    const AxisInfo a = parse_axis(p);
    EXPECT_EQ(a.kind, "category_int");
    EXPECT_EQ(a.categories_int, (std::vector<int64_t>{3, 11, 7}));
    EXPECT_TRUE(a.growth);
    EXPECT_FALSE(a.overflow);
    EXPECT_EQ(a.name, "");
  }
}

TEST(PickleReader, UnknownAxisTypeIsADecodeError) {
  PickleBytes p;
  p.proto(4).open_axis("Foo", "foo_axis").integer(0).close_axis();
  try {
    parse_axis(p);
    FAIL() << "expected DecodeError";
  } catch (const pickle::DecodeError& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported axis type hist.axis.Foo"), std::string::npos)
        << e.what();
  }
}

TEST(PickleReader, MetaWithMemoisedClassesAndLegacyAxesTuple) {
  // Two channels; the second re-uses memoised class references (BINGET), and its axes are a
  // legacy NamedAxesTuple: NEWOBJ(cls, ((axis,),)).
  PickleBytes p;
  p.proto(4).empty_dict().mark().str("channel_info").empty_dict().mark();
  p.str("a").empty_dict().mark().str("axes").empty_list().mark();
  p.str("hist.axis").binput(10).str("Regular").binput(11).op(0x93).binput(12).empty_tuple().newobj();
  p.empty_dict().str("_ax").binput(13);
  p.str("boost_histogram._core.axis").str("regular_none").op(0x93).binput(14).empty_tuple().newobj();
  p.mark().integer(0).integer(0).integer(2).axis_meta("x").binfloat(0).binfloat(1).close_axis();
  p.appends().setitems();
  p.str("b").empty_dict().mark().str("axes");
  p.stack_global("hist.axestuple", "NamedAxesTuple");
  p.binget(12).empty_tuple().newobj().empty_dict().binget(13);
  p.binget(14)
      .empty_tuple()
      .newobj()
      .mark()
      .integer(0)
      .integer(0)
      .integer(5)
      .axis_meta("y")
      .binfloat(0)
      .binfloat(1)
      .close_axis();
  p.tuple1().tuple1().newobj();
  p.str("masked").boolean(true).setitems();
  p.setitems().str("symmetric_tensor").boolean(true).setitems().stop();
  const auto root = pickle::parse(p.bytes);
  const io::MetaInfo meta = io::interpret_meta(*root);
  EXPECT_TRUE(meta.symmetric_tensor);
  ASSERT_EQ(meta.channels.size(), 2u);
  EXPECT_EQ(meta.channels[0].axes[0].size, 2);
  EXPECT_FALSE(meta.channels[0].axes[0].overflow);
  EXPECT_TRUE(meta.channels[1].masked);
  ASSERT_EQ(meta.channels[1].axes.size(), 1u);
  EXPECT_EQ(meta.channels[1].axes[0].size, 5);
  EXPECT_EQ(meta.channels[1].axes[0].name, "y");
}

TEST(PickleReader, MetaRefusals) {
  {
    PickleBytes p;
    p.proto(4)
        .empty_dict()
        .mark()
        .str("channel_info")
        .empty_dict()
        .str("exponential_transform")
        .boolean(true)
        .setitems()
        .stop();
    EXPECT_THROW(io::interpret_meta(*pickle::parse(p.bytes)), InputError);
  }
  {
    PickleBytes p;
    p.proto(4)
        .empty_dict()
        .mark()
        .str("channel_info")
        .empty_dict()
        .str("systematic_type")
        .str("weird")
        .setitems()
        .stop();
    try {
      io::interpret_meta(*pickle::parse(p.bytes));
      FAIL();
    } catch (const pickle::DecodeError&) {
      FAIL() << "an unknown systematic_type must be a hard error";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("systematic_type 'weird'"), std::string::npos);
    }
  }
  {
    PickleBytes p;
    p.proto(4).empty_dict().str("symmetric_tensor").boolean(true).setitem().stop();
    EXPECT_THROW(io::interpret_meta(*pickle::parse(p.bytes)), pickle::DecodeError);
  }
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  try {
    pickle::parse(bytes);
  } catch (const pickle::DecodeError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(PickleReader, TruncatedStreamsThrowAtEveryCut) {
  const std::vector<uint8_t> full = test::make_meta_pickle({{"c", {{3, 0.0, 1.0, "x"}}}}, false);
  ASSERT_NO_THROW(pickle::parse(full));
  for (size_t cut = 0; cut < full.size(); ++cut) {
    std::vector<uint8_t> part(full.begin(), full.begin() + static_cast<ptrdiff_t>(cut));
    EXPECT_THROW(pickle::parse(part), pickle::DecodeError) << "cut at " << cut;
  }
  std::vector<uint8_t> part(full.begin(), full.begin() + 20);
  EXPECT_NE(error_of(part).find("truncated pickle stream at byte"), std::string::npos) << error_of(part);
}

TEST(PickleReader, HostileStreamsThrowCleanly) {
  // Unsupported opcodes, with byte offset and name.
  EXPECT_NE(error_of({0x80, 0x02, 0x82, 0x01, '.'}).find("pickle opcode 0x82 (EXT1) not supported at byte 2"),
            std::string::npos);
  EXPECT_NE(error_of({'I', '1', '\n', '.'}).find("(INT) not supported"), std::string::npos);
  EXPECT_NE(error_of({0x80, 0x05, 0x97, '.'}).find("NEXT_BUFFER"), std::string::npos);
  EXPECT_NE(error_of({0x80, 0x09, '.'}).find("protocol 9"), std::string::npos);
  // Memo index never stored.
  EXPECT_NE(error_of({0x80, 0x04, 'h', 0x05, '.'}).find("memo index 5 was never stored"), std::string::npos);
  // Stack underflow, SETITEM on a non-dict, STOP on empty stack, lengths past the end.
  EXPECT_NE(error_of({0x80, 0x04, 's', '.'}).find("stack underflow"), std::string::npos);
  EXPECT_NE(error_of({0x80, 0x04, 'K', 1, 'K', 2, 'K', 3, 's', '.'}).find("SETITEM on a int"),
            std::string::npos);
  EXPECT_NE(error_of({'.'}).find("STOP with an empty stack"), std::string::npos);
  EXPECT_NE(
      error_of({0x80, 0x04, 0x8d, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, '.'}).find("truncated"),
      std::string::npos);
  EXPECT_NE(error_of({0x80, 0x04, 0x95, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, '.'}).find("truncated"),
            std::string::npos);
  EXPECT_NE(error_of({0x80, 0x04, ')', 't', '.'}).find("no MARK"), std::string::npos);
  EXPECT_NE(error_of({0x80, 0x04, '(', 'K', 1, 'd', '.'}).find("odd number"), std::string::npos);
  EXPECT_NE(error_of({0x80, 0x04, 'K', 1, 'K', 2, 0x93, '.'}).find("STACK_GLOBAL needs two strings"),
            std::string::npos);
  EXPECT_NE(error_of({0x80, 0x04, 0xff}).find("unknown opcode"), std::string::npos);
  // A MARK protects the items below it: an APPEND right after a MARK underflows.
  EXPECT_NE(error_of({0x80, 0x04, ']', '(', 'a', '.'}).find("stack underflow"), std::string::npos);
}

TEST(PickleReader, DeepNestingAndStackLimitsDoNotCrash) {
  // A million nested lists built with APPEND: parses, and the destructor does not recurse.
  PickleBytes deep;
  deep.proto(4);
  const int depth = 1000000;
  for (int i = 0; i < depth; ++i) deep.empty_list();
  for (int i = 0; i < depth - 1; ++i) deep.append();
  deep.stop();
  EXPECT_NO_THROW(pickle::parse(deep.bytes));
  // The stack limit is enforced.
  pickle::Limits limits;
  limits.max_stack = 1000;
  std::vector<uint8_t> many{0x80, 0x04};
  for (int i = 0; i < 2000; ++i) many.push_back('N');
  many.push_back('.');
  try {
    pickle::parse(many.data(), many.size(), limits);
    FAIL();
  } catch (const pickle::DecodeError& e) {
    EXPECT_NE(std::string(e.what()).find("stack exceeds 1000"), std::string::npos);
  }
}

TEST(PickleReader, RandomCorruptionNeverCrashes) {
  const std::vector<uint8_t> full = test::make_meta_pickle(
      {{"c", {{3, 0.0, 1.0, "x"}, {2, 0.0, 1.0, "y", "regular_none"}}}, {"m", {{1, 0.0, 1.0, "z"}}, true}},
      true);
  uint32_t state = 12345;
  int parsed = 0, rejected = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<uint8_t> b = full;
    for (int k = 0; k < 3; ++k) {
      state = state * 1664525u + 1013904223u;
      b[state % b.size()] = static_cast<uint8_t>(state >> 24);
    }
    try {
      const auto root = pickle::parse(b);
      try {
        io::interpret_meta(*root);
      } catch (const InputError&) {
      }
      ++parsed;
    } catch (const pickle::DecodeError&) {
      ++rejected;
    }
  }
  EXPECT_EQ(parsed + rejected, 3000);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace rabbit

namespace rabbit {
namespace {

TEST(PickleReader, SelfReferencingObjectsAreRejected) {
  // l = []; l.append(l)  ->  EMPTY_LIST MEMOIZE BINGET 0 APPEND STOP
  test::PickleBytes p;
  p.proto(4).empty_list().memoize().binget(0).append().stop();
  EXPECT_THROW(pickle::parse(p.bytes), pickle::DecodeError);
  // A cycle that is not reachable from the result is discarded silently.
  test::PickleBytes q;
  q.proto(4).empty_list().memoize().binget(0).append().op('0').integer(7).stop();
  EXPECT_EQ(pickle::parse(q.bytes)->integer, 7);
}

}  // namespace
}  // namespace rabbit
