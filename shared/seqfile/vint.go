package seqfile

import "errors"

// Hadoop's WritableUtils variable-length integers. Values in [-112, 127] take
// one byte. Otherwise the first byte is -113 - n for a positive value of n
// bytes, or -121 - n for a negative one (stored as its one's complement),
// followed by the n bytes, big-endian, 1 <= n <= 8.

// maxVLongLen is the longest encoding: a marker byte and eight bytes.
const maxVLongLen = 9

var errVLongTruncated = errors.New("truncated variable-length integer")

// appendVLong appends the encoding of v to b.
func appendVLong(b []byte, v int64) []byte {
	if v >= -112 && v <= 127 {
		return append(b, byte(v))
	}
	marker := -112
	if v < 0 {
		v = ^v
		marker = -120
	}
	n := 0
	for tmp := v; tmp != 0; tmp >>= 8 {
		n++
	}
	b = append(b, byte(int8(marker-n)))
	for i := n - 1; i >= 0; i-- {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

// vlongLen returns the total encoded length, marker included, announced by
// the first byte of an encoding.
func vlongLen(first byte) int {
	m := int8(first)
	switch {
	case m >= -112:
		return 1
	case m < -120:
		return int(-119 - int(m))
	default:
		return int(-111 - int(m))
	}
}

// vlongNegative reports whether the first byte announces a negative value.
func vlongNegative(first byte) bool {
	m := int8(first)
	return m < -120 || (m >= -112 && m < 0)
}

// decodeVLong decodes one integer from the start of b and returns it with
// the number of bytes used.
func decodeVLong(b []byte) (int64, int, error) {
	if len(b) == 0 {
		return 0, 0, errVLongTruncated
	}
	n := vlongLen(b[0])
	if n == 1 {
		return int64(int8(b[0])), 1, nil
	}
	if len(b) < n {
		return 0, 0, errVLongTruncated
	}
	var v int64
	for _, c := range b[1:n] {
		v = v<<8 | int64(c)
	}
	if vlongNegative(b[0]) {
		v = ^v
	}
	return v, n, nil
}
