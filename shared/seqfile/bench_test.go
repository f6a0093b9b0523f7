package seqfile

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

const (
	benchRecords  = 100_000
	benchValueLen = 100
)

// benchData returns benchRecords records with 100-byte values that compress
// about as well as typical text.
func benchData() (keys, values [][]byte) {
	rng := rand.New(rand.NewPCG(3, 4))
	words := []string{"spangle ", "sequins ", "hadoop ", "key ", "value ", "partition ", "replica ", "zookeeper "}
	for i := range benchRecords {
		keys = append(keys, fmt.Appendf(nil, "key-%08d", i))
		v := make([]byte, 0, benchValueLen+16)
		for len(v) < benchValueLen {
			v = append(v, words[rng.IntN(len(words))]...)
		}
		values = append(values, v[:benchValueLen])
	}
	return keys, values
}

func benchFile(b *testing.B, comp Compression, codec string) (file []byte, payload int64) {
	b.Helper()
	keys, values := benchData()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterOptions{Compression: comp, Codec: codec})
	if err != nil {
		b.Fatal(err)
	}
	for i := range keys {
		if err := w.Append(keys[i], values[i]); err != nil {
			b.Fatal(err)
		}
		payload += int64(len(keys[i]) + len(values[i]))
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes(), payload
}

// benchRead reads a 100k-record file per iteration. MB/s counts key and
// value payload bytes; records/s is reported alongside.
func benchRead(b *testing.B, comp Compression, codec string) {
	file, payload := benchFile(b, comp, codec)
	b.SetBytes(payload)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(file), "bench")
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for r.Next() {
			n++
		}
		if r.Err() != nil || n != benchRecords {
			b.Fatalf("read %d records: %v", n, r.Err())
		}
	}
	b.ReportMetric(float64(benchRecords*b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(len(file))/float64(payload), "ratio")
}

func BenchmarkReadUncompressed(b *testing.B)  { benchRead(b, None, "") }
func BenchmarkReadRecordSnappy(b *testing.B)  { benchRead(b, Record, SnappyCodec) }
func BenchmarkReadRecordZlib(b *testing.B)    { benchRead(b, Record, DefaultCodec) }
func BenchmarkReadBlockSnappy(b *testing.B)   { benchRead(b, Block, SnappyCodec) }
func BenchmarkReadBlockZstd(b *testing.B)     { benchRead(b, Block, ZStandardCodec) }
func BenchmarkReadBlockZlib(b *testing.B)     { benchRead(b, Block, DefaultCodec) }
func BenchmarkReadBlockGzip(b *testing.B)     { benchRead(b, Block, GzipCodec) }
func BenchmarkWriteBlockSnappy(b *testing.B)  { benchWrite(b, Block, SnappyCodec) }
func BenchmarkWriteBlockZstd(b *testing.B)    { benchWrite(b, Block, ZStandardCodec) }
func BenchmarkWriteUncompressed(b *testing.B) { benchWrite(b, None, "") }

func benchWrite(b *testing.B, comp Compression, codec string) {
	keys, values := benchData()
	var payload int64
	for i := range keys {
		payload += int64(len(keys[i]) + len(values[i]))
	}
	b.SetBytes(payload)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w, err := NewWriter(io.Discard, WriterOptions{Compression: comp, Codec: codec})
		if err != nil {
			b.Fatal(err)
		}
		for i := range keys {
			if err := w.Append(keys[i], values[i]); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchRecords*b.N)/b.Elapsed().Seconds(), "records/s")
}
