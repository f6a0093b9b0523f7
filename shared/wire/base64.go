package wire

import (
	"encoding/base64"
	"encoding/binary"
	"slices"
)

// AppendBase64 appends src in standard base64 with padding to dst, as
// base64.StdEncoding.AppendEncode does (FuzzAppendBase64 holds it to
// it), six bytes at a time: each twelve bits of them are two characters
// of one table. A batch answer to an app is mostly its values in
// base64; encoding them three bytes at a time was an eighth of routerd's
// CPU for a 100-key batch of 100-byte values.
func AppendBase64(dst, src []byte) []byte {
	n := base64.StdEncoding.EncodedLen(len(src))
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	i, o := 0, 0
	for ; i+8 <= len(src); i, o = i+6, o+8 {
		x := binary.BigEndian.Uint64(src[i:]) // the top 48 bits are src[i:i+6]
		binary.LittleEndian.PutUint64(out[o:], uint64(base64Pairs[x>>52])|
			uint64(base64Pairs[x>>40&0xfff])<<16|
			uint64(base64Pairs[x>>28&0xfff])<<32|
			uint64(base64Pairs[x>>16&0xfff])<<48)
	}
	base64.StdEncoding.Encode(out[o:], src[i:]) // the last 2 to 7 bytes, padded
	return dst[:len(dst)+n]
}

// base64Pairs[v] is the two characters of the twelve bits v, the first
// in the low byte. It is never written after it is made.
var base64Pairs = func() (t [1 << 12]uint16) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for v := range t {
		t[v] = uint16(alphabet[v>>6]) | uint16(alphabet[v&63])<<8
	}
	return t
}()
