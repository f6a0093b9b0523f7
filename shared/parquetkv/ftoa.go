package parquetkv

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"strconv"
)

// appendShortest appends f, finite, as strconv.AppendFloat(dst, f, 'g',
// -1, bitSize) does (bitSize 32 for a float32 widened to f), byte for
// byte, in about two thirds of strconv's time for a random double: a
// feature table is mostly floats, and strconv's shortest formatting
// was a fifth of a feature load's CPU, as much of it laying the digits
// out as finding them.
//
// The shortest digits are found with the Schubfach method (R. Giulietti,
// "The Schubfach way to render doubles", 2020): the two ends of the
// interval of decimals that read back as f, and f itself, are scaled by
// a 126-bit approximation of a power of ten (pow10g) and rounded to odd,
// which the paper shows is exact enough to decide, first among the
// decimals of one digit fewer than the scaled f, then among those of as
// many, which lie in the interval; of two, the closer to f is taken, the
// even one on a tie, which is strconv's choice too. The digits are then
// laid out as strconv's 'g' lays out the shortest: exponent form when
// the decimal exponent is under -4 or at least 6 (appendDecimal).
//
// Zeros, subnormals, powers of two (whose ties strconv breaks upwards
// where the method would take the even decimal: 2^-12 as a float32 is
// 0.00024414063 to strconv) and the rare value the method cannot place
// without a digit below its scale (a scaled f under 100, which no normal
// double or float32 gives) go to strconv.
func appendShortest(dst []byte, f float64, bitSize int) []byte {
	var (
		c, cMin uint64
		q, qMin int
		neg     bool
	)
	if bitSize == 32 {
		b := math.Float32bits(float32(f))
		neg = b>>31 != 0
		be := int(b>>23) & 0xff
		if be == 0 || be == 0xff {
			return strconv.AppendFloat(dst, f, 'g', -1, 32)
		}
		c, q = uint64(b&(1<<23-1))|1<<23, be-150
		cMin, qMin = 1<<23, -149
	} else {
		b := math.Float64bits(f)
		neg = b>>63 != 0
		be := int(b>>52) & 0x7ff
		if be == 0 || be == 0x7ff {
			return strconv.AppendFloat(dst, f, 'g', -1, 64)
		}
		c, q = b&(1<<52-1)|1<<52, be-1075
		cMin, qMin = 1<<52, -1074
	}
	// An integer below 2^53 (2^24) is its own shortest decimal: every
	// other decimal within half its ulp (at most 1/2) has more digits.
	var d uint64
	var e int
	if q < 0 && q > -64 && c&(1<<uint(-q)-1) == 0 {
		d = c >> uint(-q)
	} else {
		var ok bool
		if d, e, ok = shortestDecimal(c, q, cMin, qMin); !ok {
			return strconv.AppendFloat(dst, f, 'g', -1, bitSize)
		}
	}
	if neg {
		dst = append(dst, '-')
	}
	return appendDecimal(dst, d, e)
}

// shortestDecimal returns the shortest decimal d·10^e that reads back as
// c·2^q, the closest to it of those (the even on a tie); c is a normal
// significand with its hidden bit, at least cMin, the smallest, which
// has a closer lower neighbour unless q is qMin. ok is false for such a
// power of two, and when the scaled value is under 100 (see
// appendShortest).
func shortestDecimal(c uint64, q int, cMin uint64, qMin int) (d uint64, e int, ok bool) {
	// The interval of reals that round to c·2^q is [cb-2, cb+2]·2^(q-2),
	// ends included when c is even (out is 0). Below a power of two
	// (c is cMin) the spacing halves; strconv breaks ties there its own
	// way, so those few values, one per binary exponent, are left to it.
	if c == cMin && q != qMin {
		return 0, 0, false
	}
	out := c & 1
	cb := c << 2
	cbl, cbr := cb-2, cb+2
	k := floorLog10Pow2(q)
	h := q + floorLog2Pow10(-k) + 2
	g := &pow10g[-k-pow10gMin]
	vb := roundOdd(g[0], g[1], cb<<uint(h))
	vbl := roundOdd(g[0], g[1], cbl<<uint(h))
	vbr := roundOdd(g[0], g[1], cbr<<uint(h))
	s := vb >> 2
	if s < 100 {
		return 0, 0, false
	}
	// A decimal of one digit fewer: the multiples of ten around s.
	sp10 := 10 * (s / 10)
	tp10 := sp10 + 10
	upin := vbl+out <= sp10<<2
	wpin := tp10<<2+out <= vbr
	if upin != wpin {
		if upin {
			return sp10, k, true
		}
		return tp10, k, true
	}
	t := s + 1
	uin := vbl+out <= s<<2
	win := t<<2+out <= vbr
	if uin != win {
		if uin {
			return s, k, true
		}
		return t, k, true
	}
	// Both in the interval: the closer; s on a tie when it is even.
	cmp := int64(vb - (s+t)<<1)
	if cmp < 0 || cmp == 0 && s&1 == 0 {
		return s, k, true
	}
	return t, k, true
}

// roundOdd returns g·cp / 2^127, g = g1·2^63 + g0, rounded to odd: its
// floor with the lowest bit set when anything was cut off.
func roundOdd(g1, g0, cp uint64) uint64 {
	x1, _ := bits.Mul64(g0, cp)
	y1, y0 := bits.Mul64(g1, cp)
	z := y0>>1 + x1
	vbp := y1 + z>>63
	return vbp | (z&(1<<63-1)+(1<<63-1))>>63
}

// floorLog10Pow2 is ⌊q·log10(2)⌋, exact for |q| <= 5456721.
func floorLog10Pow2(q int) int { return int(int64(q) * 661971961083 >> 41) }

// floorLog2Pow10 is ⌊e·log2(10)⌋, exact for |e| <= 1233.
func floorLog2Pow10(e int) int { return int(int64(e) * 913124641741 >> 38) }

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// appendDecimal appends d·10^e (d > 0) as strconv's 'g' with the
// shortest precision lays out those digits: d's digits without its
// trailing zeros, in exponent form (d.ddde±XX, two exponent digits at
// least) when the exponent of the first digit is under -4 or at least 6,
// else as a plain decimal.
func appendDecimal(dst []byte, d uint64, e int) []byte {
	// Trailing zeros, by eights, then four, two and one: a value with
	// few decimals comes out of shortestDecimal with a dozen.
	for d%1e8 == 0 && d != 0 {
		d /= 1e8
		e += 8
	}
	if d%1e4 == 0 {
		d /= 1e4
		e += 4
	}
	if d%100 == 0 {
		d /= 100
		e += 2
	}
	if d%10 == 0 {
		d /= 10
		e++
	}
	var buf [digitsBuf]byte
	i := putDigits(&buf, d)
	digs := buf[i:]
	nd := len(digs)
	dp := nd + e // the decimal point is after dp digits
	if x := dp - 1; x < -4 || x >= 6 {
		dst = append(dst, digs[0])
		if nd > 1 {
			dst = append(dst, '.')
			dst = append(dst, digs[1:]...)
		}
		dst = append(dst, 'e')
		if x < 0 {
			dst = append(dst, '-')
			x = -x
		} else {
			dst = append(dst, '+')
		}
		if x >= 100 {
			dst = append(dst, byte('0'+x/100))
			x %= 100
		}
		return append(dst, digitPairs[x*2], digitPairs[x*2+1])
	}
	switch {
	case dp <= 0:
		dst = append(dst, '0', '.')
		for ; dp < 0; dp++ {
			dst = append(dst, '0')
		}
		return append(dst, digs...)
	case dp >= nd:
		dst = append(dst, digs...)
		for ; dp > nd; dp-- {
			dst = append(dst, '0')
		}
		return dst
	default:
		dst = append(dst, digs[:dp]...)
		dst = append(dst, '.')
		return append(dst, digs[dp:]...)
	}
}

// putDigits writes v's decimal digits right-aligned in buf and returns
// where they start: eight digits at a time (digits8), the leading
// block's zeros left out.
func putDigits(buf *[digitsBuf]byte, v uint64) int {
	i := digitsBuf
	for v >= 1e8 { // at most twice
		binary.LittleEndian.PutUint64(buf[i-8:i], digits8(uint32(v%1e8))+asciiZeros)
		v /= 1e8
		i -= 8
	}
	x := digits8(uint32(v))
	binary.LittleEndian.PutUint64(buf[i-8:i], x+asciiZeros)
	return i - 8 + leadingZeros8(x)
}

// digitsBuf is the size of putDigits' buffer: a power of two above the
// 20 digits of the largest uint64.
const digitsBuf = 32

// asciiZeros turns the eight digit values of digits8 into ASCII.
const asciiZeros = 0x3030303030303030

// digits8 returns the eight decimal digits of v < 10^8, zero-padded, as
// the bytes of a little-endian uint64, the first digit in the lowest
// byte: v split into two halves of four digits, each into two of two,
// each into two digits, every split done on all lanes at once by a
// multiply and shift that divide exactly in their range (n*10486>>20 is
// n/100 for n < 10^4, n*103>>10 is n/10 for n < 100; no lane's product
// reaches the next lane).
func digits8(v uint32) uint64 {
	x := uint64(v/10000) | uint64(v%10000)<<32
	hundreds := (x * 10486 >> 20) & 0x0000007f0000007f
	x = hundreds | (x-hundreds*100)<<16
	tens := (x * 103 >> 10) & 0x000f000f000f000f
	return tens | (x-tens*10)<<8
}

// leadingZeros8 is how many of digits8's digits lead with zeros, at most
// seven: a zero value is the one digit 0.
func leadingZeros8(x uint64) int {
	return bits.TrailingZeros64(x|1<<56) >> 3
}

// appendUint appends v in decimal, as strconv.AppendUint(dst, v, 10).
func appendUint(dst []byte, v uint64) []byte {
	if v < 100 {
		if v < 10 {
			return append(dst, byte('0'+v))
		}
		return append(dst, digitPairs[v*2], digitPairs[v*2+1])
	}
	if v >= 1e16 {
		var buf [digitsBuf]byte
		i := putDigits(&buf, v)
		return append(dst, buf[i:]...)
	}
	// 8-byte stores of the digits, those leading with zeros shifted out.
	l := len(dst)
	if cap(dst)-l < 16 {
		dst = slices.Grow(dst, 16)
	}
	if v >= 1e8 {
		x := digits8(uint32(v / 1e8))
		z := leadingZeros8(x)
		binary.LittleEndian.PutUint64(dst[l:l+8], (x+asciiZeros)>>(8*z))
		l += 8 - z
		binary.LittleEndian.PutUint64(dst[l:l+8], digits8(uint32(v%1e8))+asciiZeros)
		return dst[:l+8]
	}
	x := digits8(uint32(v))
	z := leadingZeros8(x)
	binary.LittleEndian.PutUint64(dst[l:l+8], (x+asciiZeros)>>(8*z))
	return dst[:l+8-z]
}

// appendInt appends v in decimal, as strconv.AppendInt(dst, v, 10).
func appendInt(dst []byte, v int64) []byte {
	if v < 0 {
		// -v wraps for the smallest int64, whose magnitude is still
		// right as a uint64.
		return appendUint(append(dst, '-'), uint64(-v))
	}
	return appendUint(dst, uint64(v))
}
