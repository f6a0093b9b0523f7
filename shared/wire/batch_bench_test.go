package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchAnswer is a 100-key answer of 100-byte values, as the benchmark's.
func benchAnswer() *BatchAnswer {
	a := NewBatchAnswer("1", 100)
	for i := 0; i < 100; i++ {
		a.Found[fmt.Sprintf("key%010d", i)] = []byte(strings.Repeat("v", 100))
	}
	return a
}

func BenchmarkBatchEncode(b *testing.B) {
	a := benchAnswer()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBatchDecode(b *testing.B) {
	body, _ := benchAnswer().Encode()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeBatchAnswer(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseBatch(b *testing.B) {
	var body []byte
	for i := 0; i < 100; i++ {
		body = AppendBatchKey(body, []byte(fmt.Sprintf("key%010d", i)))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseBatch(body, BatchLimits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBatchEncodeStd is json.Marshal of the same answer, the
// baseline of BenchmarkBatchEncode.
func BenchmarkBatchEncodeStd(b *testing.B) {
	a := benchAnswer()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(a); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBatchDecodeBinary reads the same answer in the compact form,
// positional, as routerd does (BenchmarkBatchDecode is its JSON).
func BenchmarkBatchDecodeBinary(b *testing.B) {
	body := AppendBatchBinaryHead(nil, "1", 100)
	for range 100 {
		body = AppendBatchFound(body, []byte(strings.Repeat("v", 100)))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := DecodeBatchBinary(body); err != nil {
			b.Fatal(err)
		}
	}
}
