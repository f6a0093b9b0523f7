package parquetkv

import (
	"errors"
	"strings"
	"testing"
)

func TestParseFormat(t *testing.T) {
	f, err := ParseFormat([]byte("key_column = \"user.id\"\nvalue_column = \"blob\"\ncontent_type = \"application/x-protobuf\"\nduplicates = \"last\"\npartitions = 16\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.KeyColumn != "user.id" || f.ValueColumn != "blob" || f.Duplicates != DuplicatesLast || f.Partitions != 16 ||
		f.ValueContentType() != "application/x-protobuf" || f.JSON() || f.Implicit() {
		t.Fatalf("%+v", f)
	}
	f, err = ParseFormat([]byte(`key_column = "id"` + "\n" + `exclude_columns = ["secret"]`))
	if err != nil || !f.JSON() || f.Duplicates != DuplicatesError || f.ValueContentType() != ContentTypeJSON || f.ExcludeColumns[0] != "secret" {
		t.Fatalf("%+v %v", f, err)
	}
	if d := DefaultFormat(); !d.Implicit() || d.KeyColumn != "key" || d.ValueColumn != "value" || d.ValueContentType() != ContentTypeRaw {
		t.Fatalf("default %+v", d)
	}
	for _, c := range []struct{ in, says string }{
		{``, "key_column is required"},
		{`key_column = "id"` + "\nkey_colum = 1", "unknown keys key_colum"},
		{`key_column = 3`, "bad _FORMAT"},
		{`key_column = "a..b"`, "empty name"},
		{`key_column = "id"` + "\nvalue_column = \"id\"", "is the key column"},
		{`key_column = "id"` + "\nvalue_column = \"v\"\ncolumns = [\"a\"]", "cannot be set with value_column"},
		{`key_column = "id"` + "\ncolumns = [\"a\"]\nexclude_columns = [\"b\"]", "not both"},
		{`key_column = "id"` + "\ncolumns = [\"a\", \"a\"]", "listed twice"},
		{`key_column = "id"` + "\ncolumns = [\"a.b\"]", "top-level"},
		{`key_column = "id"` + "\nduplicates = \"any\"", `"error", "first" or "last"`},
		{`key_column = "id"` + "\npartitions = -1", "out of range"},
		{`key_column = "id"` + "\npartitions = 100000000", "out of range"},
		{`key_column = "id"` + "\ncontent_type = \"text/plain\"", "content_type is for value_column"},
		{`key_column = "id"` + "\nvalue_column = \"v\"\ncontent_type = \"a\\nb\"", "line break"},
		{"key_column = \"id\"\n#" + strings.Repeat("x", MaxFormatSize), "more than"},
		{`key_column = "id"` + "\n[table]\nx = 1", "unknown keys"},
	} {
		_, err := ParseFormat([]byte(c.in))
		if !errors.Is(err, ErrBadFormat) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: error %v, want ErrBadFormat saying %q", c.in, err, c.says)
		}
	}
}
