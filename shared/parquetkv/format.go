package parquetkv

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// FormatFile is the db's marker (<root>/<db>/_FORMAT) that says how a
// Parquet version's columns map to keys and values. It sits beside the
// versions, like _PIN, so every node and every version agree on it.
const FormatFile = "_FORMAT"

// MaxFormatSize bounds how much of a marker is read: a few dozen settings
// fit many times over, and a larger file is not a marker.
const MaxFormatSize = 64 << 10

// MaxPartitions bounds the partition count a marker may name.
const MaxPartitions = 1 << 16

// ErrBadFormat wraps every error about a _FORMAT marker that exists but
// cannot be followed: what is served stays, and the error is shown.
var ErrBadFormat = errors.New("parquetkv: bad _FORMAT")

// Duplicates says what a version does with a key found in two rows.
type Duplicates string

// The values of Format.Duplicates.
const (
	// DuplicatesError fails the version (the default).
	DuplicatesError Duplicates = "error"
	// DuplicatesFirst keeps the first row: by file name, then row order.
	DuplicatesFirst Duplicates = "first"
	// DuplicatesLast keeps the last row: by file name, then row order.
	DuplicatesLast Duplicates = "last"
)

// ContentTypeJSON is the content type of values built as JSON objects.
const ContentTypeJSON = "application/json"

// ContentTypeRaw is the default content type of a value column.
const ContentTypeRaw = "application/octet-stream"

// Format is a parsed _FORMAT marker. Its zero value is not valid; use
// DefaultFormat when there is no marker, and ParseFormat for one.
type Format struct {
	// KeyColumn names the key column; a nested column by its dotted path
	// ("user.id"). Required in a marker.
	KeyColumn string `toml:"key_column"`
	// ValueColumn names a binary or string column served as it is. When
	// empty, the value is the row's other columns as one JSON object.
	ValueColumn string `toml:"value_column"`
	// ContentType is sent with values of ValueColumn; default
	// application/octet-stream. JSON values are always application/json.
	ContentType string `toml:"content_type"`
	// Columns, for JSON values, lists the top-level columns to include, in
	// the file's order; empty means all but the key column.
	Columns []string `toml:"columns"`
	// ExcludeColumns, for JSON values, lists top-level columns to leave
	// out. It may not be set with Columns.
	ExcludeColumns []string `toml:"exclude_columns"`
	// Duplicates is what a key in two rows does; default "error".
	Duplicates Duplicates `toml:"duplicates"`
	// Partitions, when set, is the version's partition count; otherwise
	// it is the number of data files.
	Partitions int `toml:"partitions"`

	// implicit is set by DefaultFormat: no marker was written, so a
	// missing column is explained by how to write one.
	implicit bool
}

// DefaultFormat is what a db without a marker uses: the columns named key
// and value.
func DefaultFormat() Format {
	return Format{KeyColumn: "key", ValueColumn: "value", Duplicates: DuplicatesError, implicit: true}
}

// Implicit reports whether f is DefaultFormat rather than a marker.
func (f Format) Implicit() bool { return f.implicit }

// JSON reports whether values are the row's columns as a JSON object.
func (f Format) JSON() bool { return f.ValueColumn == "" }

// ValueContentType is the Content-Type of the values f produces.
func (f Format) ValueContentType() string {
	switch {
	case f.JSON():
		return ContentTypeJSON
	case f.ContentType != "":
		return f.ContentType
	default:
		return ContentTypeRaw
	}
}

// ParseFormat parses and checks a marker's content. Unknown keys, a
// missing key_column, a value_column with column choices, both columns
// and exclude_columns, an unknown duplicates policy or a partition count
// out of range are errors wrapping ErrBadFormat: a typo must not quietly
// serve something else.
func ParseFormat(data []byte) (Format, error) {
	if len(data) > MaxFormatSize {
		return Format{}, fmt.Errorf("%w: %d bytes, more than %d", ErrBadFormat, len(data), MaxFormatSize)
	}
	var f Format
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&f)
	if err != nil {
		return Format{}, fmt.Errorf("%w: %v", ErrBadFormat, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return Format{}, fmt.Errorf("%w: unknown keys %s (known: key_column, value_column, content_type, columns, exclude_columns, duplicates, partitions)",
			ErrBadFormat, strings.Join(keys, ", "))
	}
	if f.Duplicates == "" {
		f.Duplicates = DuplicatesError
	}
	if err := f.check(); err != nil {
		return Format{}, err
	}
	return f, nil
}

func (f Format) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadFormat}, args...)...)
	}
	if err := checkPath("key_column", f.KeyColumn); err != nil {
		return bad("%v", err)
	}
	if f.ValueColumn != "" {
		if err := checkPath("value_column", f.ValueColumn); err != nil {
			return bad("%v", err)
		}
		if f.ValueColumn == f.KeyColumn {
			return bad("value_column %q is the key column", f.ValueColumn)
		}
		if len(f.Columns) > 0 || len(f.ExcludeColumns) > 0 {
			return bad("columns and exclude_columns choose JSON values; they cannot be set with value_column")
		}
	} else if f.ContentType != "" {
		return bad("content_type is for value_column; JSON values are %s", ContentTypeJSON)
	}
	if len(f.Columns) > 0 && len(f.ExcludeColumns) > 0 {
		return bad("set columns or exclude_columns, not both")
	}
	for _, list := range [][]string{f.Columns, f.ExcludeColumns} {
		seen := map[string]bool{}
		for _, c := range list {
			if c == "" || strings.Contains(c, ".") {
				return bad("column %q: columns and exclude_columns name top-level columns", c)
			}
			if seen[c] {
				return bad("column %q listed twice", c)
			}
			seen[c] = true
		}
	}
	switch f.Duplicates {
	case DuplicatesError, DuplicatesFirst, DuplicatesLast:
	default:
		return bad("duplicates = %q: use \"error\", \"first\" or \"last\"", f.Duplicates)
	}
	if f.Partitions < 0 || f.Partitions > MaxPartitions {
		return bad("partitions = %d: out of range [1,%d] (or leave it out: one per data file)", f.Partitions, MaxPartitions)
	}
	if strings.ContainsAny(f.ContentType, "\r\n") {
		return bad("content_type holds a line break")
	}
	return nil
}

func checkPath(key, path string) error {
	if path == "" {
		return fmt.Errorf("%s is required", key)
	}
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			return fmt.Errorf("%s %q: empty name in dotted path", key, path)
		}
	}
	return nil
}

// HowToWrite is the hint an error gives when a version without a marker
// has no key and value columns.
const HowToWrite = `write <root>/<db>/_FORMAT (TOML), e.g. key_column = "id" and either value_column = "payload" (a binary or string column served raw) or no value_column (the row's other columns as a JSON object)`
