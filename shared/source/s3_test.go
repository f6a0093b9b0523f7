package source_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"

	"spangle/shared/s3test"
	"spangle/shared/source"
	"spangle/shared/source/sourcetest"
)

// s3Env points the AWS chain at srv for the rest of the test.
func s3Env(t *testing.T, srv *s3test.Server) {
	for _, kv := range srv.ClientEnv() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_PROFILE", "")
}

// client is a plain S3 client for the test's own uploads.
func client(endpoint string) *s3.Client {
	return s3.New(s3.Options{
		Region: s3test.Region, BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(s3test.AccessKey, s3test.SecretKey, ""),
	})
}

func put(t *testing.T, c *s3.Client, bucket, key string, body []byte) {
	t.Helper()
	_, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)})
	if err != nil {
		t.Fatalf("putting %s/%s: %v", bucket, key, err)
	}
}

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	rng := rand.New(rand.NewPCG(seed, 7))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func TestS3Suite(t *testing.T) {
	srv := s3test.Start(t)
	s3Env(t, srv)
	var n atomic.Int64
	sourcetest.Run(t, sourcetest.Backend{
		NewRoot: func(t *testing.T) (string, func(source.Options) (source.Source, error)) {
			bucket := fmt.Sprintf("suite%d", n.Add(1))
			dir := srv.Bucket(bucket) + "/batch/out"
			return dir, func(o source.Options) (source.Source, error) { return source.Open("s3://"+bucket+"/batch/out/", o) }
		},
	})
}

// TestS3DirectoryMarkers: the zero-byte "db/", "db/v1/" objects that
// consoles and some writers create are neither files nor extra versions.
func TestS3DirectoryMarkers(t *testing.T) {
	srv := s3test.Start(t)
	s3Env(t, srv)
	srv.Bucket("bkt")
	c := client(srv.Endpoint())
	for _, key := range []string{"root/", "root/db/", "root/db/v1/", "root/db/v2/", "root/db/v1/part-00000"} {
		put(t, c, "bkt", key, map[bool][]byte{true: nil, false: []byte("data")}[strings.HasSuffix(key, "/")])
	}
	ctx := context.Background()
	src, err := source.Open("s3://bkt/root", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if dbs, err := src.DBs(ctx); err != nil || !reflect.DeepEqual(dbs, []string{"db"}) {
		t.Fatalf("DBs = %v, %v; want [db]", dbs, err)
	}
	// v2 holds only its marker: a version being written, with no files.
	if vs, err := src.Versions(ctx, "db"); err != nil || !reflect.DeepEqual(vs, []string{"v1", "v2"}) {
		t.Fatalf("Versions = %v, %v; want [v1 v2]", vs, err)
	}
	files, err := src.Files(ctx, "db", "v1")
	if err != nil || len(files) != 1 || files[0].Name != "part-00000" || files[0].Size != 4 {
		t.Fatalf("Files(v1) = %+v, %v; want only part-00000", files, err)
	}
	if files, err := src.Files(ctx, "db", "v2"); err != nil || len(files) != 0 {
		t.Fatalf("Files(v2) = %+v, %v; want none", files, err)
	}
}

// TestS3ResumesDroppedConnections: a proxy cuts every connection after
// 64 KiB; the object still arrives whole, by ranged GETs.
func TestS3ResumesDroppedConnections(t *testing.T) {
	srv := s3test.Start(t)
	s3Env(t, srv)
	body := randomBytes(1<<20+17, 1)
	sourcetest.Write(t, srv.Bucket("bkt"), "db/v1/part-00000", body)
	proxy := srv.Proxy(t)
	proxy.CutAfter(64 << 10)
	reg := prometheus.NewRegistry()
	src, err := source.Open("s3://bkt", source.Options{Registerer: reg,
		S3: source.S3Options{Endpoint: s3test.ProxyEndpoint(proxy), Retries: 3, Backoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := sourcetest.ReadAll(context.Background(), src, "db", "v1", "part-00000")
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read %d bytes (%v), want the %d written", len(got), err, len(body))
	}
	if proxy.Cuts() < 10 {
		t.Fatalf("the proxy cut %d connections; the test needs many", proxy.Cuts())
	}
	for name, want := range map[string]float64{
		"spangle_source_s3_read_bytes_total":   float64(len(body)),
		"spangle_source_s3_objects_read_total": 1,
	} {
		if got := gather(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := gather(t, reg, "spangle_source_s3_read_retries_total"); got < 10 {
		t.Errorf("retries = %v, want at least 10", got)
	}
}

// TestS3ChangedObjectFails: an object overwritten while it is read fails
// the read with ErrChanged at the next resumption, never mixing contents.
func TestS3ChangedObjectFails(t *testing.T) {
	srv := s3test.Start(t)
	s3Env(t, srv)
	srv.Bucket("bkt")
	c := client(srv.Endpoint())
	old := randomBytes(1<<20, 2)
	put(t, c, "bkt", "db/v1/part-00000", old)
	proxy := srv.Proxy(t)
	proxy.CutAfter(512 << 10)
	src, err := source.Open("s3://bkt", source.Options{S3: source.S3Options{Endpoint: s3test.ProxyEndpoint(proxy), Backoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := src.Open(context.Background(), "db", "v1", "part-00000")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	head := make([]byte, 100<<10)
	if _, err := io.ReadFull(rc, head); err != nil || !bytes.Equal(head, old[:len(head)]) {
		t.Fatalf("reading the start: %v", err)
	}
	put(t, c, "bkt", "db/v1/part-00000", randomBytes(1<<20, 3))
	rest, err := io.ReadAll(rc)
	if !errors.Is(err, source.ErrChanged) {
		t.Fatalf("reading on after the object changed: %d more bytes, %v; want ErrChanged", len(rest), err)
	}
	if !bytes.Equal(rest, old[len(head):len(head)+len(rest)]) {
		t.Fatal("bytes of the new object were mixed into the old one")
	}
}

// TestS3GivesUpWhenServerGone: with the server stopped mid-object, the
// read fails after its bounded retries instead of hanging.
func TestS3GivesUpWhenServerGone(t *testing.T) {
	srv := s3test.Start(t)
	s3Env(t, srv)
	sourcetest.Write(t, srv.Bucket("bkt"), "db/v1/part-00000", randomBytes(8<<20, 4))
	reg := prometheus.NewRegistry()
	src, err := source.Open("s3://bkt", source.Options{Registerer: reg, S3: source.S3Options{Retries: 2, Backoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := src.Open(context.Background(), "db", "v1", "part-00000")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadFull(rc, make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	_, err = io.Copy(io.Discard, rc)
	if err == nil || !strings.Contains(err.Error(), "gave up after 2 attempts") {
		t.Fatalf("reading with the server stopped: %v; want a give-up after 2 attempts", err)
	}
	if got := gather(t, reg, "spangle_source_s3_errors_total"); got < 1 {
		t.Errorf("errors_total = %v, want some", got)
	}
}

// TestS3ClearErrors: a wrong secret and a missing bucket name the bucket
// and S3's error code.
func TestS3ClearErrors(t *testing.T) {
	srv := s3test.Start(t)
	s3Env(t, srv)
	srv.Bucket("real")
	ctx := context.Background()
	missing, err := source.Open("s3://no-such-bucket/x", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = missing.DBs(ctx)
	if err == nil || !strings.Contains(err.Error(), `"no-such-bucket"`) || !strings.Contains(err.Error(), "NoSuchBucket") {
		t.Errorf("listing a missing bucket: %v; want the bucket and NoSuchBucket", err)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	reg := prometheus.NewRegistry()
	wrong, err := source.Open("s3://real/x", source.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	_, err = wrong.DBs(ctx)
	if err == nil || !strings.Contains(err.Error(), `"real"`) || !strings.Contains(err.Error(), "SignatureDoesNotMatch") {
		t.Errorf("listing with a wrong secret: %v; want the bucket and SignatureDoesNotMatch", err)
	}
	if got := gather(t, reg, "spangle_source_s3_errors_total", "code", "SignatureDoesNotMatch"); got < 1 {
		t.Errorf("errors_total{code=SignatureDoesNotMatch} = %v", got)
	}
}

// TestS3Endpoints: the endpoint comes from [s3] endpoint, else
// AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, and any of them turns on
// path-style addressing unless path_style says otherwise.
func TestS3Endpoints(t *testing.T) {
	srv := s3test.Start(t)
	s3Env(t, srv)
	sourcetest.Write(t, srv.Bucket("bkt"), "db/v1/part-00000", []byte("x"))
	ctx := context.Background()
	dbs := func(o source.S3Options) error {
		src, err := source.Open("s3://bkt", source.Options{S3: o})
		if err != nil {
			return err
		}
		got, err := src.DBs(ctx)
		if err == nil && !reflect.DeepEqual(got, []string{"db"}) {
			err = fmt.Errorf("DBs = %v", got)
		}
		return err
	}
	if err := dbs(source.S3Options{}); err != nil {
		t.Errorf("AWS_ENDPOINT_URL_S3: %v", err)
	}
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_ENDPOINT_URL", srv.Endpoint())
	if err := dbs(source.S3Options{}); err != nil {
		t.Errorf("AWS_ENDPOINT_URL: %v", err)
	}
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	if err := dbs(source.S3Options{Endpoint: srv.Endpoint()}); err != nil {
		t.Errorf("[s3] endpoint over AWS_ENDPOINT_URL: %v", err)
	}
	// The server serves path-style requests only; virtual-hosted ones go
	// to bkt.localhost, and fail.
	byName := strings.Replace(srv.Endpoint(), "127.0.0.1", "localhost", 1)
	if err := dbs(source.S3Options{Endpoint: byName}); err != nil {
		t.Errorf("endpoint %s: %v", byName, err)
	}
	if err := dbs(source.S3Options{Endpoint: byName, PathStyle: aws.Bool(false)}); err == nil {
		t.Error("path_style = false reached the server by path")
	} else {
		t.Logf("path_style = false: %v", err)
	}
}

// gather sums the counter name over the series whose labels include
// the given name, value pairs.
func gather(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range m.GetLabel() {
					found = found || l.GetName() == labels[i] && l.GetValue() == labels[i+1]
				}
				if !found {
					continue series
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}
