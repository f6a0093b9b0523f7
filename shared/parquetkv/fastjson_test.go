package parquetkv

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"spangle/shared/wire"
)

// TestFastStringsMatchEncodingJSON: appendJSONString writes what
// wire.AppendJSONString writes, byte for byte, and that reads back as
// the string encoding/json reads back from its own encoding (invalid
// UTF-8 as U+FFFD in both), over the edges of the plain-byte fast path
// and random bytes.
func TestFastStringsMatchEncodingJSON(t *testing.T) {
	cases := [][]byte{
		nil, []byte(""), []byte("US"), []byte("power"), []byte(" ~"), []byte("a\"b"), []byte(`a\b`),
		[]byte("\x00"), []byte("\x1f"), []byte("tab\there"), []byte("line\nbreak\r"), []byte("\x7f"),
		[]byte("caf\xc3\xa9"), []byte("\xff"), []byte("ok\xc3"), []byte("\xed\xa0\x80"), // a surrogate half
		[]byte("\u2028\u2029"), []byte("<a href='x'>&amp;</a>"), []byte("日本語"), []byte("\xf0\x9f\x98\x80"),
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20000; i++ {
		b := make([]byte, rng.IntN(24))
		for k := range b {
			switch rng.IntN(4) {
			case 0:
				b[k] = byte(rng.IntN(256))
			default:
				b[k] = byte(0x20 + rng.IntN(0x60))
			}
		}
		cases = append(cases, b)
	}
	for _, s := range cases {
		got := appendJSONString([]byte("x"), s)
		if want := wire.AppendJSONString([]byte("x"), string(s)); !bytes.Equal(got, want) {
			t.Fatalf("%q: %s, want %s", s, got, want)
		}
		var back, ref string
		if err := json.Unmarshal(got[1:], &back); err != nil {
			t.Fatalf("%q: %s is not a JSON string: %v", s, got[1:], err)
		}
		enc, err := json.Marshal(string(s))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(enc, &ref); err != nil {
			t.Fatal(err)
		}
		if back != ref {
			t.Fatalf("%q reads back as %q, encoding/json's as %q", s, back, ref)
		}
	}
}

// TestFastNumbersMatchEncodingJSON: the integer, float and timestamp
// printers write what encoding/json writes for the same values, or for
// floats a number that reads back as the same double (encoding/json
// prints 1e6 as 1000000, strconv's shortest form as 1e+06), including
// negative zero and the integers' ends; NaN and the infinities, which
// encoding/json refuses, are the strings the mapping names.
func TestFastNumbersMatchEncodingJSON(t *testing.T) {
	for _, v := range []int64{0, -1, 1, 9, 10, 99, 100, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64, 1 << 53, 1<<53 + 1} {
		c := &directColumn{kind: dkInt64, i64: []int64{v}, is64: true}
		want, _ := json.Marshal(v)
		if got := c.appendItem(nil, 0); !bytes.Equal(got, want) {
			t.Errorf("int64 %d: %s, want %s", v, got, want)
		}
	}
	for _, v := range []uint64{0, math.MaxUint32, math.MaxUint64, 1<<63 + 7} {
		c := &directColumn{kind: dkUint64, i64: []int64{int64(v)}, is64: true}
		want, _ := json.Marshal(v)
		if got := c.appendItem(nil, 0); !bytes.Equal(got, want) {
			t.Errorf("uint64 %d: %s, want %s", v, got, want)
		}
	}

	for f, want := range map[float64]string{math.NaN(): `"NaN"`, math.Inf(1): `"Infinity"`, math.Inf(-1): `"-Infinity"`} {
		for _, bits := range []int{32, 64} {
			if got := appendFloat(nil, f, bits); string(got) != want {
				t.Errorf("%v (%d bits): %s, want %s", f, bits, got, want)
			}
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-4, 9.9999e-5, 1e6, 999999.9999, 1e21, 1e-7, 5e-324,
		math.MaxFloat64, math.SmallestNonzeroFloat64, -math.MaxFloat64, math.MaxFloat32, 123.45, 1 << 53, 1<<53 + 2}
	for i := 0; i < 50000; i++ {
		floats = append(floats, rng.Float64(), rng.NormFloat64()*1e8, math.Round(rng.Float64()*1e6)/100,
			math.Float64frombits(rng.Uint64()))
	}
	for _, f := range floats {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		for _, bits := range []int{32, 64} {
			v := f
			if bits == 32 {
				v = float64(float32(f))
				if math.IsInf(v, 0) {
					continue
				}
			}
			got := appendFloat(nil, v, bits)
			var back float64
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("%v (%d bits): %s is not a JSON number: %v", v, bits, got, err)
			}
			if bits == 32 {
				back = float64(float32(back))
			}
			if math.Float64bits(back) != math.Float64bits(v) {
				t.Fatalf("%v (%d bits): %s reads back as %v", v, bits, got, back)
			}
			if want := strconv.AppendFloat(nil, v, 'g', -1, bits); !bytes.Equal(got, want) {
				t.Fatalf("%v (%d bits): %s, strconv's shortest %s", v, bits, got, want)
			}
			if enc, _ := json.Marshal(v); bits == 64 && !bytes.Contains(enc, []byte("e")) && !bytes.Contains(got, []byte("e")) && !bytes.Equal(got, enc) {
				t.Fatalf("%v: %s, encoding/json %s", v, got, enc)
			}
		}
	}

	// time.Time's JSON is RFC 3339 with nanoseconds, as a timestamp's.
	units := []arrow.TimeUnit{arrow.Second, arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond}
	for i := 0; i < 50000; i++ {
		unit := units[rng.IntN(len(units))]
		perSec := map[arrow.TimeUnit]int64{arrow.Second: 1, arrow.Millisecond: 1e3, arrow.Microsecond: 1e6, arrow.Nanosecond: 1e9}[unit]
		// Years 1 to 9999, as far as the unit reaches.
		lo, hi := int64(-62135596800), int64(253402300799)
		if unit == arrow.Nanosecond {
			lo, hi = math.MinInt64/perSec+1, math.MaxInt64/perSec-1
		}
		v := (lo+rng.Int64N(hi-lo))*perSec + rng.Int64N(perSec)
		want, err := json.Marshal(arrow.Timestamp(v).ToTime(unit).UTC())
		if err != nil {
			t.Fatal(err)
		}
		if got := appendTimestamp(nil, v, unit); !bytes.Equal(got, want) {
			t.Fatalf("%d %s: %s, encoding/json %s", v, unit, got, want)
		}
	}
	if got, want := appendTimestamp(nil, 0, arrow.Microsecond), `"1970-01-01T00:00:00Z"`; string(got) != want {
		t.Errorf("epoch: %s, want %s", got, want)
	}
}
