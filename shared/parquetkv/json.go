package parquetkv

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"spangle/shared/wire"
)

// appendValue appends row i of a as JSON, typed as a user would expect:
// numbers as numbers (NaN and infinities as the strings "NaN",
// "Infinity", "-Infinity"), timestamps as RFC 3339 in UTC, dates as
// YYYY-MM-DD, decimals as strings (a double would round them), UTF-8
// strings as strings and other binary as base64, lists as arrays, maps and
// structs as objects (a map's keys as their text), nulls as null. A type
// without a mapping of its own is its arrow text form, as a string.
func appendValue(dst []byte, a arrow.Array, i int) []byte {
	if a.IsNull(i) {
		return append(dst, "null"...)
	}
	switch a := a.(type) {
	case *array.Null:
		return append(dst, "null"...)
	case *array.Boolean:
		return strconv.AppendBool(dst, a.Value(i))
	case *array.Int8:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int64:
		return strconv.AppendInt(dst, a.Value(i), 10)
	case *array.Uint8:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint64:
		return strconv.AppendUint(dst, a.Value(i), 10)
	case *array.Float16:
		return appendFloat(dst, float64(a.Value(i).Float32()), 32)
	case *array.Float32:
		return appendFloat(dst, float64(a.Value(i)), 32)
	case *array.Float64:
		return appendFloat(dst, a.Value(i), 64)
	case *array.String:
		return wire.AppendJSONString(dst, a.Value(i))
	case *array.LargeString:
		return wire.AppendJSONString(dst, a.Value(i))
	case *array.Binary:
		return appendBase64(dst, a.Value(i))
	case *array.LargeBinary:
		return appendBase64(dst, a.Value(i))
	case *array.FixedSizeBinary:
		return appendBase64(dst, a.Value(i))
	case *array.Date32:
		return appendTime(dst, time.Unix(int64(a.Value(i))*86400, 0), time.DateOnly)
	case *array.Date64:
		return appendTime(dst, time.UnixMilli(int64(a.Value(i))), time.DateOnly)
	case *array.Timestamp:
		return appendTimestamp(dst, int64(a.Value(i)), a.DataType().(*arrow.TimestampType).Unit)
	case *array.Time32:
		unit := a.DataType().(*arrow.Time32Type).Unit
		return appendTime(dst, a.Value(i).ToTime(unit), "15:04:05.999999999")
	case *array.Time64:
		unit := a.DataType().(*arrow.Time64Type).Unit
		return appendTime(dst, a.Value(i).ToTime(unit), "15:04:05.999999999")
	case *array.Decimal128:
		scale := a.DataType().(*arrow.Decimal128Type).Scale
		return wire.AppendJSONString(dst, a.Value(i).ToString(scale))
	case *array.Decimal256:
		scale := a.DataType().(*arrow.Decimal256Type).Scale
		return wire.AppendJSONString(dst, a.Value(i).ToString(scale))
	case *array.Map:
		return appendMap(dst, a, i)
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		items := a.ListValues()
		dst = append(dst, '[')
		for j := start; j < end; j++ {
			if j > start {
				dst = append(dst, ',')
			}
			dst = appendValue(dst, items, int(j))
		}
		return append(dst, ']')
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		dst = append(dst, '{')
		for k := 0; k < a.NumField(); k++ {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = wire.AppendJSONString(dst, st.Field(k).Name)
			dst = append(dst, ':')
			dst = appendValue(dst, a.Field(k), i)
		}
		return append(dst, '}')
	case *array.Dictionary:
		return appendValue(dst, a.Dictionary(), a.GetValueIndex(i))
	default:
		return wire.AppendJSONString(dst, a.ValueStr(i))
	}
}

func appendMap(dst []byte, a *array.Map, i int) []byte {
	start, end := a.ValueOffsets(i)
	keys, items := a.Keys(), a.Items()
	dst = append(dst, '{')
	var kbuf []byte
	for j := int(start); j < int(end); j++ {
		if j > int(start) {
			dst = append(dst, ',')
		}
		kbuf = appendValue(kbuf[:0], keys, j)
		if len(kbuf) > 0 && kbuf[0] == '"' {
			dst = append(dst, kbuf...)
		} else {
			// A number, bool or nested key becomes its text.
			dst = wire.AppendJSONString(dst, string(kbuf))
		}
		dst = append(dst, ':')
		dst = appendValue(dst, items, j)
	}
	return append(dst, '}')
}

func appendFloat(dst []byte, f float64, bits int) []byte {
	if bits == 64 {
		// NaN and the infinities are not short decimals.
		if b, ok := appendShortDecimal(dst, f); ok {
			return b
		}
	}
	return appendFloatBits(dst, f, bits)
}

// appendFloatLong appends a double as appendFloat does, without trying
// it as a short decimal first: for a column that holds few.
func appendFloatLong(dst []byte, f float64) []byte { return appendFloatBits(dst, f, 64) }

// appendFloatBits is appendFloat but for the short decimals.
func appendFloatBits(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	return appendShortest(dst, f, bits)
}

// shortScale is 10^shortDecimals: appendShortDecimal prints floats with
// at most that many decimals.
const (
	shortDecimals = 4
	shortScale    = 1e4
)

// appendShortDecimal prints f as strconv's shortest 'g' form does, when
// f is a decimal of at most shortDecimals decimals in [1e-4, 1e6): prices,
// rates and counts held in doubles. It reports false for any other f.
//
// Why it gives strconv's digits: n/10^4 rounds to f (IEEE division of
// exact operands is correctly rounded), so it is a decimal that reads
// back as f, of at most 10 significant digits; at most one decimal of 15
// or fewer significant digits reads back as a given double, so it is the
// shortest one, which is what strconv prints. In [1e-4, 1e6) 'g' prints
// it without an exponent.
func appendShortDecimal(dst []byte, f float64) ([]byte, bool) {
	a := math.Abs(f)
	if !(a >= 1e-4 && a < 1e6) {
		return dst, false
	}
	n := uint64(a*shortScale + 0.5) // a*shortScale < 1e10: exact to well under 0.5
	if float64(n)/shortScale != a {
		return dst, false
	}
	if f < 0 {
		dst = append(dst, '-')
	}
	dst = appendUint(dst, n/uint64(shortScale))
	frac := n % uint64(shortScale)
	if frac == 0 {
		return dst, true
	}
	// '.' and the four decimals (the high half of digits8's eight) in one
	// 8-byte store; the trailing zeros, its high zero bytes, cut off.
	x := digits8(uint32(frac))
	keep := shortDecimals - bits.LeadingZeros64(x)>>3
	l := len(dst)
	if cap(dst)-l < 8 {
		dst = slices.Grow(dst, 8)
	}
	binary.LittleEndian.PutUint64(dst[l:l+8], '.'|(x+asciiZeros)>>32<<8)
	return dst[:l+1+keep], true
}

// jsonPlain[c] says byte c stands for itself inside a JSON string as
// wire.AppendJSONString writes one: ASCII from the space on, but the
// quote and the backslash.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendJSONString appends s as wire.AppendJSONString does. A string of
// plain bytes only, what nearly every string column holds, is copied as
// it is, with no decoding of runes.
func appendJSONString(dst, s []byte) []byte {
	if l := len(dst); cap(dst)-l >= len(s)+2 {
		// Checked and copied in one pass, with no call to memmove:
		// strings in rows are mostly a few bytes.
		d := dst[l : l+len(s)+2]
		for i, c := range s {
			if !jsonPlain[c] {
				return wire.AppendJSONString(dst, unsafeString(s))
			}
			d[i+1] = c
		}
		d[0], d[len(s)+1] = '"', '"'
		return dst[:l+len(s)+2]
	}
	for _, c := range s {
		if !jsonPlain[c] {
			return wire.AppendJSONString(dst, unsafeString(s))
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

func appendTime(dst []byte, t time.Time, layout string) []byte {
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, layout)
	return append(dst, '"')
}

func appendBase64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// appendTimestamp appends v of unit as appendTime prints it in RFC 3339
// with nanoseconds, without going through time.Time for the years 1 to
// 9999 (a feature table's timestamps are a column of them). Each unit
// divides by its own constant, which the compiler turns into a multiply.
func appendTimestamp(dst []byte, v int64, unit arrow.TimeUnit) []byte {
	return appendTimestampIn(dst, v, unit, nil)
}

// dateCache holds the date digits of the last days a timestamp column
// printed, by day number: a column's timestamps mostly fall within a few
// years, so most rows find their date here instead of working out the
// calendar (civil) and its digits.
type dateCache struct {
	ent [dateCacheSize]dateEntry
}

// dateCacheSize is how many days a dateCache holds: the days of almost
// three years, one slot each.
const dateCacheSize = 1024

type dateEntry struct {
	day  int64
	date uint64 // "YYYYMMDD" as ASCII, the first digit in the low byte; 0 for none
}

// appendTimestampIn is appendTimestamp with a cache of dates, dc, which
// may be nil.
func appendTimestampIn(dst []byte, v int64, unit arrow.TimeUnit, dc *dateCache) []byte {
	var (
		secs, frac int64
		width      int // digits of frac
	)
	switch unit {
	case arrow.Second:
		secs = v
	case arrow.Millisecond:
		secs, frac, width = v/1e3, v%1e3, 3
		if frac < 0 {
			secs, frac = secs-1, frac+1e3
		}
	case arrow.Microsecond:
		secs, frac, width = v/1e6, v%1e6, 6
		if frac < 0 {
			secs, frac = secs-1, frac+1e6
		}
	case arrow.Nanosecond:
		secs, frac, width = v/1e9, v%1e9, 9
		if frac < 0 {
			secs, frac = secs-1, frac+1e9
		}
	default:
		return appendTime(dst, arrow.Timestamp(v).ToTime(unit), time.RFC3339Nano)
	}
	days, sod := secs/86400, secs%86400
	if sod < 0 {
		days, sod = days-1, sod+86400
	}
	// Days from 1970-01-01 of 0001-01-01 and of 10000-01-01.
	if days < -719162 || days >= 2932897 {
		return appendTime(dst, arrow.Timestamp(v).ToTime(unit), time.RFC3339Nano)
	}
	// "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ" in quotes: 32 bytes at most. The
	// date's eight digits and the time's six are each made at once
	// (digits8), then placed around their separators.
	var date uint64
	var e *dateEntry
	if dc != nil {
		e = &dc.ent[uint64(days)%dateCacheSize]
		if e.day == days {
			date = e.date
		}
	}
	if date == 0 {
		y, m, d := civil(days)
		date = digits8(uint32(y*10000+m*100+d)) + asciiZeros
		if e != nil {
			e.day, e.date = days, date
		}
	}
	var b [32]byte
	b[0] = '"'
	binary.LittleEndian.PutUint32(b[1:5], uint32(date))
	b[5] = '-'
	binary.LittleEndian.PutUint16(b[6:8], uint16(date>>32))
	b[8] = '-'
	binary.LittleEndian.PutUint16(b[9:11], uint16(date>>48))
	b[11] = 'T'
	hms := uint32(sod)
	clock := digits8(hms/3600*10000+hms/60%60*100+hms%60) + asciiZeros
	binary.LittleEndian.PutUint16(b[12:14], uint16(clock>>16))
	b[14] = ':'
	binary.LittleEndian.PutUint16(b[15:17], uint16(clock>>32))
	b[17] = ':'
	binary.LittleEndian.PutUint16(b[18:20], uint16(clock>>48))
	n := 20
	if frac != 0 && width < 8 {
		// '.' and frac's width digits, zero-padded, in one 8-byte
		// store: digits8's eight with the leading 8-width (zeros)
		// shifted out, its trailing zeros (the word's high zero bytes)
		// cut off.
		x := digits8(uint32(frac)) >> (8 * (8 - width))
		keep := 8 - bits.LeadingZeros64(x)>>3
		binary.LittleEndian.PutUint64(b[20:28], '.'|(x+asciiZeros>>(8*(8-width)))<<8)
		n += 1 + keep
	} else if frac != 0 {
		// frac's width digits, zero-padded: those of 10^width + frac
		// but the leading 1.
		var fb [digitsBuf]byte
		putDigits(&fb, uint64(frac)+fracPad[width])
		digs := fb[len(fb)-width:]
		for digs[width-1] == '0' {
			width--
		}
		b[n] = '.'
		n += 1 + copy(b[n+1:], digs[:width])
	}
	b[n], b[n+1] = 'Z', '"'
	if l := len(dst); cap(dst)-l >= len(b) {
		// One 32-byte store, not a call to memmove.
		*(*[32]byte)(dst[l : l+len(b)]) = b
		return dst[:l+n+2]
	}
	return append(dst, b[:n+2]...)
}

// fracPad[w] is 10^w, for the widths of a timestamp's fraction.
var fracPad = [10]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// civil returns the proleptic Gregorian date of a day number counted
// from 1970-01-01, for the years 1 to 9999 (days in [-719162, 2932897)).
// Every quantity fits 32 unsigned bits there, whose divisions by
// constants are the cheapest.
func civil(days int64) (year, month, day int) {
	z := uint32(days + 719468) // from 0000-03-01
	era := z / 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	day = int(doy - (153*mp+2)/5 + 1)
	month = int(mp + 3)
	if month > 12 {
		month -= 12
	}
	year = int(yoe + era*400)
	if month <= 2 {
		year++
	}
	return year, month, day
}
