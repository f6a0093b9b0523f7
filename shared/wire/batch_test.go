package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseBatch(t *testing.T) {
	lim := BatchLimits{MaxKeys: 4, MaxBytes: 64}
	cases := []struct {
		name string
		body string
		raws []string // nil with err
		keys []string
		err  error
	}{
		{"one key", "a", []string{"a"}, []string{"a"}, nil},
		{"final newline", "a\nb\n", []string{"a", "b"}, []string{"a", "b"}, nil},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}, []string{"a", "b"}, nil},
		{"escapes", "a%2Fb\n%00%ff\n100%25\n..", []string{"a%2Fb", "%00%ff", "100%25", ".."}, []string{"a/b", "\x00\xff", "100%", ".."}, nil},
		{"duplicate kept once", "a\nb\na", []string{"a", "b"}, []string{"a", "b"}, nil},
		{"same key written two ways", "a/b\na%2Fb", []string{"a/b", "a%2Fb"}, []string{"a/b", "a/b"}, nil},
		{"empty body", "", nil, nil, nil},
		{"only a newline", "\n", nil, nil, nil},
		{"empty line inside", "a\n\nb", nil, nil, ErrBatchEmptyKey},
		{"two final newlines", "a\n\n", nil, nil, ErrBatchEmptyKey},
		{"empty first line", "\na", nil, nil, ErrBatchEmptyKey},
		{"bad escape", "a\n%zz", nil, nil, ErrBatchBadKey},
		{"too many keys", "a\nb\nc\nd\ne", nil, nil, ErrBatchTooLarge},
		{"too many bytes", strings.Repeat("k", 65), nil, nil, ErrBatchTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseBatch([]byte(c.body), lim)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.raws) {
				t.Fatalf("got %+v, want raws %q", got, c.raws)
			}
			for i, k := range got {
				if k.Raw != c.raws[i] || k.Key != c.keys[i] {
					t.Fatalf("key %d = %+v, want %q %q", i, k, c.raws[i], c.keys[i])
				}
			}
		})
	}
	if _, err := ParseBatch([]byte(strings.Repeat("k", MaxKeyLen+1)), BatchLimits{MaxBytes: 1 << 20}); !errors.Is(err, ErrBatchBadKey) {
		t.Fatalf("key over MaxKeyLen: err %v", err)
	}
	if BatchStatus(ErrBatchTooLarge) != 413 || BatchStatus(ErrBatchEmptyKey) != 400 {
		t.Fatal("BatchStatus")
	}
}

// TestParseBatchRepeats: repeated lines anywhere in batches short and
// long (more lines than dropRepeats hashes on its stack) are kept once,
// at their first place, as a map of every line keeps them.
func TestParseBatchRepeats(t *testing.T) {
	for _, n := range []int{2, 100, 128, 129, 300} {
		for _, every := range []int{0, 1, 7, 50} {
			var lines []string
			for i := 0; i < n; i++ {
				k := fmt.Sprintf("k%d", i)
				if every > 0 && i%every == every-1 {
					k = fmt.Sprintf("k%d", i/2) // an earlier key
				}
				lines = append(lines, k)
			}
			got, err := ParseBatch([]byte(strings.Join(lines, "\n")), BatchLimits{})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			seen := map[string]bool{}
			for _, l := range lines {
				if !seen[l] {
					seen[l] = true
					want = append(want, l)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d lines, a repeat every %d: %d keys, want %d", n, every, len(got), len(want))
			}
			for i, k := range got {
				if k.Raw != want[i] {
					t.Fatalf("%d lines, a repeat every %d: key %d is %q, want %q", n, every, i, k.Raw, want[i])
				}
			}
		}
	}
}

func TestReadBatchLimit(t *testing.T) {
	if _, err := ReadBatch(strings.NewReader(strings.Repeat("k\n", 100)), BatchLimits{MaxBytes: 199, MaxKeys: 1000}); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("err %v, want ErrBatchTooLarge", err)
	}
	keys, err := ReadBatch(strings.NewReader("a\nb\n"), BatchLimits{})
	if err != nil || len(keys) != 2 {
		t.Fatalf("%v %v", keys, err)
	}
}

func TestBatchAnswerRoundTrip(t *testing.T) {
	a := NewBatchAnswer("v1", 2)
	a.Found["a%2Fb"] = []byte{0, 0xff, 'x'}
	a.Found["empty"] = []byte{}
	a.Missing = append(a.Missing, "gone")
	a.Failed["k"] = FailReason(504, "all tried replicas timed out")
	b, err := a.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"a%2Fb":"AP94"`)) {
		t.Fatalf("value not standard base64 under the raw key: %s", b)
	}
	back, err := DecodeBatchAnswer(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Version != "v1" || !bytes.Equal(back.Found["a%2Fb"], []byte{0, 0xff, 'x'}) || len(back.Found["empty"]) != 0 ||
		back.Missing[0] != "gone" || FailStatus(back.Failed["k"]) != 504 {
		t.Fatalf("round trip: %+v", back)
	}
	empty, _ := (&BatchAnswer{Version: "v"}).Encode()
	if string(empty) != `{"version":"v","found":{},"missing":[],"failed":{}}`+"\n" {
		t.Fatalf("empty answer %s", empty)
	}
	for reason, want := range map[string]int{ReasonNotHeld: 421, "503 shed": 503, "5": 0, "abc def": 0, "4210 x": 0, "099 x": 0} {
		if got := FailStatus(reason); got != want {
			t.Errorf("FailStatus(%q) = %d, want %d", reason, got, want)
		}
	}
}

// FuzzParseBatch: whatever the body, ParseBatch never panics, keeps to
// its limits, returns distinct non-empty raws that unescape to their
// keys, and the keys written back with AppendBatchKey parse to the same
// keys.
func FuzzParseBatch(f *testing.F) {
	for _, s := range []string{"a\nb\n", "a%2Fb\n%00%ff\n", "\n", "a\n\nb", "%zz", "a\r\nb", "x\nx\nx", "100%25\n..\n/"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		lim := BatchLimits{MaxKeys: 50, MaxBytes: 4096}
		keys, err := ParseBatch(body, lim)
		if err != nil {
			if !errors.Is(err, ErrBatchTooLarge) && !errors.Is(err, ErrBatchEmptyKey) && !errors.Is(err, ErrBatchBadKey) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if len(keys) > lim.MaxKeys {
			t.Fatalf("%d keys over the limit", len(keys))
		}
		var lines []string
		first := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
			if l = strings.TrimSuffix(l, "\r"); !first[l] {
				first[l] = true
				lines = append(lines, l)
			}
		}
		if len(keys) > 0 && len(lines) != len(keys) {
			t.Fatalf("%d keys of %d distinct lines", len(keys), len(lines))
		}
		seen := map[string]bool{}
		var again []byte
		for i, k := range keys {
			if k.Raw != lines[i] {
				t.Fatalf("key %d written %q, line %q", i, k.Raw, lines[i])
			}
			if k.Raw == "" || k.Key == "" || seen[k.Raw] || strings.ContainsAny(k.Raw, "\n") {
				t.Fatalf("bad key %+v", k)
			}
			seen[k.Raw] = true
			again = AppendBatchKey(again, []byte(k.Key))
		}
		back, err := ParseBatch(again, BatchLimits{MaxKeys: 50, MaxBytes: 1 << 20})
		if err != nil {
			t.Fatalf("re-encoded batch: %v", err)
		}
		// Duplicates by key collapse only when written the same way.
		j := 0
		for _, k := range keys {
			if j < len(back) && back[j].Key == k.Key {
				j++
			}
		}
		if j != len(back) {
			t.Fatalf("round trip: %+v -> %+v", keys, back)
		}
	})
}

// FuzzBatchAnswerEncode: Encode's JSON decodes, with encoding/json, to
// exactly what json.Marshal's of the same answer decodes to.
func FuzzBatchAnswerEncode(f *testing.F) {
	f.Add("v1", "a%2Fb", []byte("\x00\xff"), "k\"\\\n", "504 timed out")
	f.Add("1", "\xff\xfe<>&", []byte{}, "\u2028\x7f\x01", "\xc3")
	f.Fuzz(func(t *testing.T, version, key string, value []byte, other, reason string) {
		a := NewBatchAnswer(version, 1)
		a.Found[key] = value
		a.Missing = append(a.Missing, other, key)
		a.Failed[other] = reason
		a.Failed[key+reason] = other
		mine, err := a.Encode()
		if err != nil {
			t.Fatal(err)
		}
		std, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var got, want BatchAnswer
		if err := json.Unmarshal(mine, &got); err != nil {
			t.Fatalf("Encode wrote invalid JSON %q: %v", mine, err)
		}
		if err := json.Unmarshal(std, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Encode %q decodes to %+v, json.Marshal's to %+v", mine, got, want)
		}
	})
}

// FuzzAppendPathEscape: AppendPathEscape writes what url.PathEscape does,
// after what dst held.
func FuzzAppendPathEscape(f *testing.F) {
	for _, s := range []string{"key-0000000001", "a/b c?d;e,f", "$&+:=@-_.~", "\x00\xff%\n\r", "ü€", ""} {
		f.Add([]byte("p/"), []byte(s))
	}
	f.Fuzz(func(t *testing.T, dst, key []byte) {
		got := AppendPathEscape(slices.Clip(dst), key)
		if want := string(dst) + url.PathEscape(string(key)); string(got) != want {
			t.Fatalf("AppendPathEscape(%q, %q) = %q, want %q", dst, key, got, want)
		}
	})
}
