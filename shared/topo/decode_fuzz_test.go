package topo

import (
	"errors"
	"testing"
)

// The decoders of what ZooKeeper holds, fuzzed: whatever the bytes, a
// decoder returns a value within the bounds or ErrInvalid (ErrNoInfo,
// ErrBadName where documented), and never panics. The seed corpus is in
// testdata/fuzz/<target>; `go test -fuzz=FuzzDecodeVersionInfo
// ./shared/topo` explores from it.

func FuzzDecodeNode(f *testing.F) {
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		n, err := DecodeNode(name, data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if CheckNode(&n) != nil || NodeName(n.ShardID, n.Addr) != name {
			t.Fatalf("decoded %+v from entry %q", n, name)
		}
	})
}

func FuzzDecodeVersionInfo(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := DecodeVersionInfo(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrNoInfo) {
				t.Fatalf("error %v is neither ErrInvalid nor ErrNoInfo", err)
			}
			return
		}
		if info.NumPartitions < 1 || info.NumPartitions > MaxPartitions {
			t.Fatalf("decoded %d partitions", info.NumPartitions)
		}
	})
}

func FuzzParseReplicaName(f *testing.F) {
	f.Fuzz(func(t *testing.T, name string) {
		p, addr, err := ParseReplicaName(name)
		if err != nil {
			if !errors.Is(err, ErrBadName) {
				t.Fatalf("error %v is not ErrBadName", err)
			}
			return
		}
		if p < 0 || p >= MaxPartitions || addr == "" {
			t.Fatalf("parsed partition %d, addr %q from %q", p, addr, name)
		}
	})
}

func FuzzDecodePin(f *testing.F) {
	f.Fuzz(func(t *testing.T, db string, data []byte) {
		p, err := DecodePin(db, data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if p.Generation > MaxPinGeneration || (p.Version != "" && !ValidName(p.Version)) || !ValidName(db) {
			t.Fatalf("decoded %+v of %q", p, db)
		}
	})
}

func FuzzDecodeDecision(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := DecodeDecision(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if d.RingVersion < 0 || d.RingVersion > MaxRingVersion || d.Epoch != 0 {
			t.Fatalf("decoded %+v", d)
		}
	})
}

func FuzzDecodeAssignment(f *testing.F) {
	f.Fuzz(func(t *testing.T, db, version string, data []byte) {
		a, err := DecodeAssignment(db, version, data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if a.DB != db || a.Version != version || CheckVersion(db, version) != nil {
			t.Fatalf("decoded %s/%s from %s/%s", a.DB, a.Version, db, version)
		}
		if len(a.Replicas) < 1 || len(a.Replicas) > MaxPartitions || (a.Previous != nil && len(a.Previous) != len(a.Replicas)) {
			t.Fatalf("decoded %d partitions, %d previous", len(a.Replicas), len(a.Previous))
		}
		if a.RingVersion < 0 || a.RingVersion > MaxRingVersion {
			t.Fatalf("decoded ring version %d", a.RingVersion)
		}
		for _, lists := range [][][]string{a.Replicas, a.Previous} {
			for _, hs := range lists {
				if len(hs) > MaxHolders {
					t.Fatalf("decoded %d holders", len(hs))
				}
				for _, h := range hs {
					if CheckShardID(h) != nil {
						t.Fatalf("decoded holder %q", h)
					}
				}
			}
		}
	})
}
