package seqfile

import (
	"bytes"
	"math"
	"testing"
)

func TestVLong(t *testing.T) {
	tests := []struct {
		v   int64
		enc []byte
	}{
		// Encodings as Hadoop's WritableUtils.writeVLong produces them.
		{0, []byte{0x00}},
		{127, []byte{0x7f}},
		{-112, []byte{0x90}},
		{128, []byte{0x8f, 0x80}},
		{255, []byte{0x8f, 0xff}},
		{256, []byte{0x8e, 0x01, 0x00}},
		{-113, []byte{0x87, 0x70}},
		{-256, []byte{0x87, 0xff}},
		{-257, []byte{0x86, 0x01, 0x00}},
		{math.MaxInt64, []byte{0x88, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{math.MinInt64, []byte{0x80, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	}
	for _, tt := range tests {
		got := appendVLong(nil, tt.v)
		if !bytes.Equal(got, tt.enc) {
			t.Errorf("appendVLong(%d) = % x, want % x", tt.v, got, tt.enc)
		}
		v, n, err := decodeVLong(tt.enc)
		if err != nil || v != tt.v || n != len(tt.enc) {
			t.Errorf("decodeVLong(% x) = %d, %d, %v", tt.enc, v, n, err)
		}
		if _, _, err := decodeVLong(tt.enc[:len(tt.enc)-1]); err == nil {
			t.Errorf("decodeVLong(% x) truncated: no error", tt.enc)
		}
	}
	for v := int64(-70000); v <= 70000; v++ {
		enc := appendVLong(nil, v)
		if got, n, err := decodeVLong(enc); got != v || n != len(enc) || err != nil {
			t.Fatalf("round trip %d: %d %d %v", v, got, n, err)
		}
	}
}
