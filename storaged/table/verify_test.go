package table

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// VerifyPartition reads the whole table, paced, and passes a good one;
// a flipped byte in any data block, even the last, fails it with
// ErrCorrupt naming the table and the block's offset.
func TestVerifyPartition(t *testing.T) {
	for _, snappy := range []bool{false, true} {
		dir := buildPartition(t, 5000, BuildOptions{BlockSize: 512, Snappy: snappy})
		path := onlyTable(t, dir)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		paced, calls := 0, 0
		pace := func(n int) error { paced += n; calls++; return nil }
		if err := VerifyPartition(context.Background(), dir, pace); err != nil {
			t.Fatalf("snappy %v: good partition: %v", snappy, err)
		}
		if paced != len(data) || calls < 2 {
			t.Fatalf("snappy %v: paced %d bytes in %d calls, the table has %d", snappy, paced, calls, len(data))
		}

		p, err := OpenPartition(dir, CacheOptions{})
		if err != nil {
			t.Fatal(err)
		}
		last := p.tables[0].handles[len(p.tables[0].handles)-1]
		p.Close()
		for _, off := range []int{100, int(last.offset) + 3} {
			bad := append([]byte(nil), data...)
			bad[off] ^= 0x01
			if err := os.WriteFile(path, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			err := VerifyPartition(context.Background(), dir, nil)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
				t.Fatalf("snappy %v: byte %d flipped: %v, want ErrCorrupt naming %s", snappy, off, err, path)
			}
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The pace function's error stops the walk, and so does the context.
func TestVerifyPartitionStops(t *testing.T) {
	dir := buildPartition(t, 5000, BuildOptions{BlockSize: 512})
	stop := errors.New("enough")
	if err := VerifyPartition(context.Background(), dir, func(int) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("pace failing: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := VerifyPartition(ctx, dir, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// A block that cannot be read back, here because the file was cut short
// under the open partition, is ErrCorrupt too: it marks the partition bad
// like a failed checksum.
func TestUnreadableBlockIsCorrupt(t *testing.T) {
	dir := buildPartition(t, 2000, BuildOptions{BlockSize: 512})
	p, err := OpenPartition(dir, CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := os.Truncate(onlyTable(t, dir), 1000); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Get(nil, fmt.Appendf(nil, "key-%06d", 1999)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("lookup in a block past the file's end: %v, want ErrCorrupt", err)
	}
}
