package dbver

import "testing"

func TestVersionAndPartition(t *testing.T) {
	v := Of("db", "v1")
	if v != (Version{DB: "db", Version: "v1"}) {
		t.Fatalf("Of = %+v", v)
	}
	p := v.Partition(3)
	if p != (Partition{DB: "db", Version: "v1", P: 3}) {
		t.Fatalf("Partition(3) = %+v", p)
	}
	if p.Of() != v {
		t.Errorf("Partition(3).Of() = %+v, want %+v", p.Of(), v)
	}
	if v.Partition(4) == p || Of("db", "v2").Partition(3) == p {
		t.Error("partitions of different numbers or versions compare equal")
	}
	if got := v.String(); got != "db/v1" {
		t.Errorf("Version.String = %q", got)
	}
	if got := p.String(); got != "db/v1/3" {
		t.Errorf("Partition.String = %q", got)
	}
	// Both are map keys.
	seen := map[Partition]bool{p: true}
	if !seen[Of("db", "v1").Partition(3)] {
		t.Error("an equal partition misses the map")
	}
}
