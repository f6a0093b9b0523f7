package parquetkv

import (
	"encoding/base64"
	"math"
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
		unit := a.DataType().(*arrow.TimestampType).Unit
		return appendTime(dst, a.Value(i).ToTime(unit), time.RFC3339Nano)
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
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
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
