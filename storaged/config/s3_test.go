package config

import (
	"strings"
	"testing"
)

func TestS3Section(t *testing.T) {
	c := Default()
	err := Decode(`
source = "s3://batch-output/spangle"
local_store = "/tmp/x"

[s3]
endpoint = "http://minio:9000"
path_style = false
region = "eu-west-1"
`, &c)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.S3.Endpoint != "http://minio:9000" || c.S3.PathStyle == nil || *c.S3.PathStyle || c.S3.Region != "eu-west-1" {
		t.Fatalf("decoded %+v", c.S3)
	}
	// Unset path_style stays nil: path-style whenever an endpoint is set.
	d := Default()
	if err := Decode("source = \"s3://b/p\"\n[s3]\nregion = \"us-west-2\"\n", &d); err != nil || d.S3.PathStyle != nil {
		t.Fatalf("path_style unset: %+v, %v", d.S3, err)
	}
	for _, bad := range []string{"minio:9000", "ftp://x", "http://"} {
		c := Default()
		c.Source = "s3://b/p"
		c.S3.Endpoint = bad
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "s3.endpoint") {
			t.Errorf("endpoint %q: %v; want an error naming s3.endpoint", bad, err)
		}
	}
	if err := Decode("[s3]\nendpont = \"x\"\n", &c); err == nil || !strings.Contains(err.Error(), "s3.endpont") {
		t.Errorf("misspelt key: %v", err)
	}
}
