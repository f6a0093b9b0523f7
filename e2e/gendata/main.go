// Command gendata writes the generated database that `make up` serves and
// the e2e scenarios check: Hadoop SequenceFiles (or, with -sparkey,
// Sparkey pairs), pre-sharded, or with -parquet Parquet files served as
// JSON, with values that name their version and key
// (see spangle/e2e/dataset).
package main

import (
	"flag"
	"fmt"
	"os"

	"spangle/e2e/dataset"
)

func main() {
	out := flag.String("out", "", "source root to write into (required)")
	db := flag.String("db", dataset.DefaultDB, "database name")
	version := flag.String("version", "v0001", "version name")
	keys := flag.Int("keys", dataset.DefaultKeys, "number of keys")
	parts := flag.Int("partitions", dataset.DefaultPartitions, "number of data files (partitions)")
	spk := flag.Bool("sparkey", false, "write Sparkey pairs (.spl and .spi.sz) instead of SequenceFiles")
	pq := flag.Bool("parquet", false, "write Parquet files, served as JSON by the _FORMAT written beside them, instead of SequenceFiles")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	dir, err := dataset.Write(*out, dataset.Spec{DB: *db, Version: *version, Keys: *keys, Partitions: *parts, Sparkey: *spk, Parquet: *pq})
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendata:", err)
		os.Exit(1)
	}
	fmt.Println(dir)
}
