package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"
)

func TestBatchBinaryRoundTrip(t *testing.T) {
	want := []BatchEntry{
		{Kind: BatchFound, Value: []byte("\x00value\xff")},
		{Kind: BatchMissing},
		{Kind: BatchFailed, Reason: "504 timed out"},
		{Kind: BatchFound, Value: []byte{}},
		{Kind: BatchFound, Value: bytes.Repeat([]byte("v"), 300)},
	}
	b := AppendBatchBinaryHead(nil, "v1", len(want))
	for _, e := range want {
		switch e.Kind {
		case BatchFound:
			b = AppendBatchFound(b, e.Value)
		case BatchMissing:
			b = AppendBatchMissing(b)
		case BatchFailed:
			b = AppendBatchFailed(b, e.Reason)
		}
	}
	version, got, err := DecodeBatchBinary(b)
	if err != nil || version != "v1" {
		t.Fatalf("%q %v", version, err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Kind != want[i].Kind || !bytes.Equal(got[i].Value, want[i].Value) || got[i].Reason != want[i].Reason {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// Every cut short of the end, and anything after it, is an error.
	for n := 0; n < len(b); n++ {
		if _, _, err := DecodeBatchBinary(b[:n]); !errors.Is(err, ErrBadBatchBinary) {
			t.Fatalf("cut at %d of %d: %v", n, len(b), err)
		}
	}
	if _, _, err := DecodeBatchBinary(append(b, BatchMissing)); !errors.Is(err, ErrBadBatchBinary) {
		t.Fatalf("a byte past the end: %v", err)
	}
	bad := AppendBatchBinaryHead(nil, "v1", 1)
	if _, _, err := DecodeBatchBinary(append(bad, 'z')); !errors.Is(err, ErrBadBatchBinary) {
		t.Fatalf("unknown kind: %v", err)
	}
	// A count larger than the bytes left is refused before allocating.
	huge := binary.AppendUvarint(AppendBatchBinaryHead(nil, "v1", 0)[:3], 1<<40)
	if _, _, err := DecodeBatchBinary(huge); !errors.Is(err, ErrBadBatchBinary) {
		t.Fatalf("huge count: %v", err)
	}
}

func TestBatchAccepts(t *testing.T) {
	for accept, want := range map[string]bool{
		"":                     false,
		ContentTypeJSON:        false,
		"*/*":                  false,
		ContentTypeBatchBinary: true,
		"application/json, " + ContentTypeBatchBinary:       true,
		ContentTypeBatchBinary + ";q=0.5, application/json": true,
		ContentTypeBatchBinary + ";q=0":                     false,
		ContentTypeBatchBinary + "; q=0.000":                false,
		"application/x-spangle-batchy":                      false,
		"application/x-spangle-batch;;;":                    false,
		BatchAccept:                                         true, // routerd's, on the fast path
	} {
		h := http.Header{}
		if accept != "" {
			h.Set("Accept", accept)
		}
		if got := BatchAccepts(h); got != want {
			t.Errorf("Accept %q: %v, want %v", accept, got, want)
		}
	}
}

// TestAppendBatchJSON: the router's writer says what BatchAnswer.Encode
// of the same answer says.
func TestAppendBatchJSON(t *testing.T) {
	keys := []string{"a%2Fb", "\xff\"k", "miss", "fail", "empty"}
	entries := []BatchEntry{
		{Kind: BatchFound, Value: []byte("\x00v")},
		{Kind: BatchFound, Value: []byte("w")},
		{Kind: BatchMissing},
		{Kind: BatchFailed, Reason: "504 timed out"},
		{Kind: BatchFound, Value: []byte{}},
	}
	a := NewBatchAnswer("v\"1", 0)
	a.Found[keys[0]], a.Found[keys[1]], a.Found[keys[4]] = entries[0].Value, entries[1].Value, entries[4].Value
	a.Missing = append(a.Missing, keys[2])
	a.Failed[keys[3]] = entries[3].Reason
	std, err := a.Encode()
	if err != nil {
		t.Fatal(err)
	}
	mine := AppendBatchJSON(nil, a.Version, keys, entries)
	var got, want BatchAnswer
	if err := json.Unmarshal(mine, &got); err != nil {
		t.Fatalf("%s: %v", mine, err)
	}
	if err := json.Unmarshal(std, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("AppendBatchJSON %s, Encode %s", mine, std)
	}
	if n := BatchJSONSize(a.Version, keys, entries); n < len(mine) {
		t.Fatalf("BatchJSONSize %d for %d bytes", n, len(mine))
	}
	empty := AppendBatchJSON(nil, "1", nil, nil)
	if string(empty) != `{"version":"1","found":{},"missing":[],"failed":{}}`+"\n" {
		t.Fatalf("empty answer %s", empty)
	}
}

// FuzzDecodeBatchBinary: whatever the bytes, DecodeBatchBinary never
// panics, and what it accepts encodes back to the same bytes.
func FuzzDecodeBatchBinary(f *testing.F) {
	seed := AppendBatchBinaryHead(nil, "v1", 3)
	seed = AppendBatchFailed(AppendBatchMissing(AppendBatchFound(seed, []byte("val"))), ReasonNotHeld)
	f.Add(seed)
	f.Add(AppendBatchBinaryHead(nil, "", 0))
	f.Add([]byte{0x02, 'v', '1', 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{0x01, 'v', 0x01, 'f', 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		version, entries, err := DecodeBatchBinary(b)
		if err != nil {
			if !errors.Is(err, ErrBadBatchBinary) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		again := AppendBatchBinaryHead(nil, version, len(entries))
		for _, e := range entries {
			switch e.Kind {
			case BatchFound:
				again = AppendBatchFound(again, e.Value)
			case BatchMissing:
				again = AppendBatchMissing(again)
			case BatchFailed:
				again = AppendBatchFailed(again, e.Reason)
			default:
				t.Fatalf("entry of kind %#x accepted", e.Kind)
			}
		}
		// Uvarints may be written longer than needed; what they say must
		// hold.
		v2, e2, err := DecodeBatchBinary(again)
		if err != nil || v2 != version || !reflect.DeepEqual(e2, entries) && len(entries) > 0 {
			t.Fatalf("re-encoded: %v %q/%q %+v/%+v", err, v2, version, e2, entries)
		}
	})
}
