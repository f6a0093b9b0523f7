package scale

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSumBy(t *testing.T) {
	text := `# HELP spangle_storaged_partitions_loaded_total Partitions loaded.
# TYPE spangle_storaged_partitions_loaded_total counter
spangle_storaged_partitions_loaded_total{from="peer"} 12
spangle_storaged_partitions_loaded_total{db="a",from="source"} 30
spangle_storaged_partitions_loaded_total{db="b",from="source"} 2.5
spangle_storaged_partitions_loaded_total_extra{from="source"} 1000
spangle_storaged_partitions_loaded_total 7
other{from="source"} 9
`
	got, err := sumBy(strings.NewReader(text), partitionsMetric, "from")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["peer"] != 12 || got["source"] != 32.5 {
		t.Fatalf("sumBy = %v, want peer 12, source 32.5", got)
	}
	if _, err := sumBy(strings.NewReader(partitionsMetric+`{from="peer"} x`), partitionsMetric, "from"); err == nil {
		t.Fatal("sumBy took a sample that is no number")
	}
}

func TestCreateCost(t *testing.T) {
	dir := t.TempDir()
	us, err := createCost(dir, 5)
	if err != nil {
		t.Fatal(err)
	}
	if us <= 0 {
		t.Fatalf("createCost = %v us an inode, want > 0", us)
	}
	kids, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 5 {
		t.Fatalf("%d partitions made, want 5", len(kids))
	}
	files, err := os.ReadDir(filepath.Join(dir, "4"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("%d files in a partition, want 3", len(files))
	}
}
