package source

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzParseS3: whatever the root, a parsed s3:// root names a bucket and
// a prefix that is empty or ends in "/", with no empty, "." or ".."
// component, so that no key it builds leaves the prefix.
func FuzzParseS3(f *testing.F) {
	for _, s := range []string{"s3://b/p", "s3://b", "s3://b/a/b/", "s3://b/../x", "s3://b//x", "s3://u@b/x", "s3:///x", "s3://b/%2e%2e/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, root string) {
		u, err := url.Parse(root)
		if err != nil {
			return
		}
		bucket, prefix, err := parseS3(root, u)
		if err != nil {
			return
		}
		if bucket == "" || strings.Contains(bucket, "/") {
			t.Fatalf("%q: bucket %q", root, bucket)
		}
		if prefix == "" {
			return
		}
		if !strings.HasSuffix(prefix, "/") {
			t.Fatalf("%q: prefix %q does not end in /", root, prefix)
		}
		for _, part := range strings.Split(strings.TrimSuffix(prefix, "/"), "/") {
			if part == "" || part == "." || part == ".." {
				t.Fatalf("%q: prefix %q has component %q", root, prefix, part)
			}
		}
	})
}
