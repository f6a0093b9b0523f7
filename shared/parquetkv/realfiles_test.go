package parquetkv

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestRealFiles reads every file written by another Parquet writer
// (parquet-mr, Impala, Spark, PyArrow, arrow-rs) and checks the row count
// and exact records.
func TestRealFiles(t *testing.T) {
	cases := []struct {
		file  string
		key   string
		value string // "" for JSON
		rows  int
		want  map[string]string // key -> value for some rows
	}{
		{"alltypes_plain.parquet", "id", "", 8, map[string]string{
			"0": `{"bool_col":true,"tinyint_col":0,"smallint_col":0,"int_col":0,"bigint_col":0,"float_col":0,"double_col":0,"date_string_col":"MDEvMDEvMDk=","string_col":"MA==","timestamp_col":"2009-01-01T00:00:00Z"}`,
			"5": `{"bool_col":false,"tinyint_col":1,"smallint_col":1,"int_col":1,"bigint_col":10,"float_col":1.1,"double_col":10.1,"date_string_col":"MDMvMDEvMDk=","string_col":"MQ==","timestamp_col":"2009-03-01T00:01:00Z"}`,
		}},
		{"alltypes_dictionary.parquet", "id", "", 2, map[string]string{
			"1": `{"bool_col":false,"tinyint_col":1,"smallint_col":1,"int_col":1,"bigint_col":10,"float_col":1.1,"double_col":10.1,"date_string_col":"MDEvMDEvMDk=","string_col":"MQ==","timestamp_col":"2009-01-01T00:01:00Z"}`,
		}},
		{"alltypes_plain.snappy.parquet", "id", "", 2, map[string]string{
			"7": `{"bool_col":false,"tinyint_col":1,"smallint_col":1,"int_col":1,"bigint_col":10,"float_col":1.1,"double_col":10.1,"date_string_col":"MDQvMDEvMDk=","string_col":"MQ==","timestamp_col":"2009-04-01T00:01:00Z"}`,
		}},
		{"byte_stream_split.zstd.parquet", "", "", 300, map[string]string{
			"0": `{"f32":1.7640524,"f64":-1.3065268517353166}`,
			"2": `{"f32":0.978738,"f64":-0.11816404512856976}`,
		}},
		{"concatenated_gzip_members.parquet", "long_col", "", 513, map[string]string{
			"1": `{}`, "513": `{}`,
		}},
		{"datapage_v2.snappy.parquet", "b", "", 5, map[string]string{
			"1": `{"a":"abc","c":2,"d":true,"e":[1,2,3]}`,
			"4": `{"a":null,"c":5,"d":false,"e":[1,2,3]}`,
		}},
		{"delta_length_byte_array.parquet", "FRUIT", "", 1000, map[string]string{
			"apple_banana_mango0": `{}`, "apple_banana_mango4": `{}`,
		}},
		{"hadoop_lz4_compressed.parquet", "", "", 4, map[string]string{
			"0": `{"c0":1593604800,"c1":"YWJj","v11":42}`,
			"2": `{"c0":1593604801,"c1":"YWJj","v11":42.125}`,
		}},
		{"lz4_raw_compressed.parquet", "", "", 4, map[string]string{
			"1": `{"c0":1593604800,"c1":"ZGVm","v11":7.7}`,
		}},
		{"hadoop_lz4_compressed.parquet", "", "", 4, nil},
		{"int96_from_spark.parquet", "", "", 6, map[string]string{
			"0": `{"a":"2024-01-01T20:34:56.123456Z"}`,
			"2": `{"a":"9999-12-31T03:00:00Z"}`,
			"4": `{"a":null}`,
		}},
		{"nested_maps.snappy.parquet", "", "", 6, map[string]string{
			"0": `{"a":{"a":{"1":true,"2":false}},"b":1,"c":1}`,
			"2": `{"a":{"c":null},"b":1,"c":1}`,
			"3": `{"a":{"d":{}},"b":1,"c":1}`,
		}},
		{"nonnullable.impala.parquet", "ID", "", 1, map[string]string{
			"8": `{"Int_Array":[-1],"int_array_array":[[-1,-2],[]],"Int_Map":{"k1":-1},"int_map_array":[{},{"k1":1},{},{}],"nested_Struct":{"a":-1,"B":[-1],"c":{"D":[[{"e":-1,"f":"nonnullable"}]]},"G":{}}}`,
		}},
		{"nulls.snappy.parquet", "", "", 8, map[string]string{
			"7": `{"b_struct":{"b_c_int":null}}`,
		}},
		{"plain-dict-uncompressed-checksum.parquet", "", "binary_field", 1000, map[string]string{
			"0": "a655fd0e-9949-4059-bcae-fd6a002a4652",
		}},
		{"rle-dict-snappy-checksum.parquet", "", "binary_field", 1000, map[string]string{
			"0": "c95e263a-f5d4-401f-8107-5ca7146a1f98",
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			f := Format{KeyColumn: c.key, ValueColumn: c.value, Duplicates: DuplicatesFirst}
			recs, err := readAll(t, c.file, testFile(t, c.file), f)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != c.rows {
				t.Fatalf("%d rows, want %d", len(recs), c.rows)
			}
			got := map[string]string{}
			for _, r := range recs {
				if _, dup := got[r.key]; !dup {
					got[r.key] = r.value
				}
				if f.JSON() && !json.Valid([]byte(r.value)) {
					t.Fatalf("key %q: invalid JSON %s", r.key, r.value)
				}
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("key %q:\n got %s\nwant %s", k, got[k], v)
				}
			}
		})
	}
}

// TestDeltaByteArrayExpect checks every row of delta_byte_array.parquet
// against the CSV its writers published.
func TestDeltaByteArrayExpect(t *testing.T) {
	rows, err := csv.NewReader(bytes.NewReader(testFile(t, "delta_byte_array_expect.csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	header, rows := rows[0], rows[1:]
	recs, err := readAll(t, "delta_byte_array.parquet", testFile(t, "delta_byte_array.parquet"),
		Format{KeyColumn: "c_customer_id", Duplicates: DuplicatesError})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(rows) {
		t.Fatalf("%d rows, want %d", len(recs), len(rows))
	}
	for i, r := range recs {
		if r.key != rows[i][0] {
			t.Fatalf("row %d: key %q, want %q", i, r.key, rows[i][0])
		}
		var obj map[string]*string
		if err := json.Unmarshal([]byte(r.value), &obj); err != nil {
			t.Fatalf("row %d: %v: %s", i, err, r.value)
		}
		if len(obj) != len(header)-1 {
			t.Fatalf("row %d: %d fields, want %d", i, len(obj), len(header)-1)
		}
		for j, name := range header[1:] {
			want := rows[i][j+1]
			got := obj[name]
			// The CSV writes a null as an empty field.
			if (got == nil) != (want == "") || (got != nil && *got != want) {
				t.Fatalf("row %d column %s: got %v, want %q", i, name, got, want)
			}
		}
	}
}

// TestCorruptChecksum: a page whose CRC does not match fails with the
// file, the column and the reason.
func TestCorruptChecksum(t *testing.T) {
	_, err := readAll(t, "datapage_v1-corrupt-checksum.parquet", testFile(t, "datapage_v1-corrupt-checksum.parquet"), Format{})
	wantErr(t, err, "datapage_v1-corrupt-checksum.parquet", "CRC mismatch", "column a")
}

func TestTestdataCovered(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.parquet")
	if len(files) != 17 {
		t.Fatalf("%d test files; the tests above name 17", len(files))
	}
}
