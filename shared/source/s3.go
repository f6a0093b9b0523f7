package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// DefaultRegion is the region used when neither [s3] region nor the AWS
// chain names one; S3-compatible stores usually accept any.
const DefaultRegion = "us-east-1"

// folderSuffix marks the empty "directory" objects some tools (Hadoop's
// S3 file systems, the AWS console) write; they are not data.
const folderSuffix = "_$folder$"

// S3Options configures s3:// roots. The zero value uses the standard AWS
// chain for credentials, region and endpoint (AWS_ENDPOINT_URL_S3 or
// AWS_ENDPOINT_URL reach an S3-compatible store).
type S3Options struct {
	// Endpoint is an S3-compatible store's URL; it overrides the
	// AWS_ENDPOINT_URL* variables.
	Endpoint string
	// PathStyle forces path-style (true) or virtual-hosted (false)
	// addressing; nil means path-style whenever an endpoint is set, since
	// S3-compatible stores rarely serve bucket subdomains.
	PathStyle *bool
	// Region overrides the chain's region; default the chain's, else
	// DefaultRegion.
	Region string
	// Retries bounds the resumptions of one object's download in a row
	// without progress; default 5.
	Retries int
	// Backoff is the first pause before a resumption, doubling up to 5s;
	// default 200ms.
	Backoff time.Duration
}

// s3root is a source root in an S3 bucket: keys <prefix><db>/<version>/<file>.
type s3root struct {
	bucket  string
	prefix  string // "" or ending in "/"
	client  *s3.Client
	opts    Options
	metrics *s3Metrics
}

// parseS3 splits s3://bucket/prefix into bucket and a prefix that is
// empty or ends in "/".
func parseS3(root string, u *url.URL) (bucket, prefix string, err error) {
	if u.Host == "" {
		return "", "", fmt.Errorf("%w: %q: no bucket (want s3://bucket/prefix)", ErrBadRoot, root)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Port() != "" {
		return "", "", fmt.Errorf("%w: %q: an s3:// root is only s3://bucket/prefix", ErrBadRoot, root)
	}
	p := strings.Trim(u.Path, "/")
	if p != "" {
		for _, part := range strings.Split(p, "/") {
			if part == "" || part == "." || part == ".." {
				return "", "", fmt.Errorf("%w: %q: bad prefix %q", ErrBadRoot, root, u.Path)
			}
		}
		p += "/"
	}
	return u.Host, p, nil
}

func openS3(root string, u *url.URL, opts Options) (*s3root, error) {
	bucket, prefix, err := parseS3(root, u)
	if err != nil {
		return nil, err
	}
	o := opts.S3
	if o.Retries <= 0 {
		o.Retries = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = 200 * time.Millisecond
	}
	opts.S3 = o
	// Loading the chain reads the environment and the shared files only;
	// credentials are fetched on the first request, so an unreachable S3
	// or instance-metadata service does not stop a start.
	var load []func(*awsconfig.LoadOptions) error
	if o.Region != "" {
		load = append(load, awsconfig.WithRegion(o.Region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(context.Background(), load...)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: loading the AWS configuration: %v", ErrBadRoot, root, err)
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	client := s3.NewFromConfig(cfg, func(so *s3.Options) {
		// Streams are checked by size and ETag; validating a whole-object
		// checksum is not possible on resumed ranges anyway.
		so.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		switch {
		case o.PathStyle != nil:
			so.UsePathStyle = *o.PathStyle
		case so.BaseEndpoint != nil:
			so.UsePathStyle = true
		}
	})
	m, err := newS3Metrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &s3root{bucket: bucket, prefix: prefix, client: client, opts: opts, metrics: m}, nil
}

func (r *s3root) String() string { return "s3://" + r.bucket + "/" + r.prefix }

// fail counts err by its S3 error code and wraps it (in ErrNotFound or
// ErrUnavailable) with what was being done, the bucket and the code, so that a wrong credential or a missing
// bucket reads as such in the log and on /healthz.
func (r *s3root) fail(what string, err error) error {
	code := errorCode(err)
	if code == "NoSuchKey" || code == "NotFound" {
		return fmt.Errorf("%w: s3://%s/%s", ErrNotFound, r.bucket, what)
	}
	r.metrics.errors.WithLabelValues(code).Inc()
	// Whatever S3 said (a network error, a 5xx, even AccessDenied, which
	// a policy fix cures), the objects may be fine: ErrUnavailable.
	return fmt.Errorf("%w: s3 bucket %q: %s: %s: %w", ErrUnavailable, r.bucket, what, code, err)
}

// errorCode is S3's error code (AccessDenied, NoSuchBucket,
// InvalidAccessKeyId, ...), or "canceled" or "network" for failures
// without an answer.
func errorCode(err error) string {
	var api smithy.APIError
	switch {
	case errors.As(err, &api):
		return api.ErrorCode()
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	default:
		return "network"
	}
}

// list lists one level below dir (a key prefix ending in "/"), every page
// of it, and returns the names of the sub-"directories" and the objects.
// found is false when no key at all starts with dir.
func (r *s3root) list(ctx context.Context, dir string) (dirs []string, objs []File, found bool, err error) {
	p := s3.NewListObjectsV2Paginator(r.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(r.bucket), Prefix: aws.String(dir), Delimiter: aws.String("/"),
	})
	for p.HasMorePages() {
		r.metrics.lists.Inc()
		page, err := p.NextPage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, false, ctx.Err()
			}
			return nil, nil, false, r.fail(fmt.Sprintf("listing prefix %q", dir), err)
		}
		for _, cp := range page.CommonPrefixes {
			found = true
			name := strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), dir), "/")
			dirs = append(dirs, name)
		}
		for _, o := range page.Contents {
			found = true
			name := strings.TrimPrefix(aws.ToString(o.Key), dir)
			// The directory's own marker ("db/v1/") and "*_$folder$"
			// markers are not files.
			if name == "" || strings.HasSuffix(name, folderSuffix) {
				continue
			}
			f := File{Name: name, Size: aws.ToInt64(o.Size)}
			if o.LastModified != nil {
				f.ModTime = o.LastModified.UTC()
			}
			objs = append(objs, f)
		}
	}
	return dirs, objs, found, nil
}

func (r *s3root) DBs(ctx context.Context) ([]string, error) {
	dirs, _, _, err := r.list(ctx, r.prefix)
	if err != nil {
		return nil, err
	}
	return sortedValid(dedup(dirs)), nil
}

func (r *s3root) Versions(ctx context.Context, db string) ([]string, error) {
	if !ValidName(db) {
		return nil, fmt.Errorf("%w: bad db name %q", ErrNotFound, db)
	}
	dirs, _, found, err := r.list(ctx, r.prefix+db+"/")
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, db)
	}
	vs := sortedValid(dedup(dirs))
	if !r.opts.RequireSuccess {
		return vs, nil
	}
	out := vs[:0]
	for _, v := range vs {
		ok, err := r.exists(ctx, r.prefix+db+"/"+v+"/"+SuccessFile)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, v)
		}
	}
	return out, nil
}

// Succeeded asks for <prefix>/<db>/<version>/_SUCCESS with one HEAD.
func (r *s3root) Succeeded(ctx context.Context, db, version string) (bool, error) {
	if !ValidName(db) || !ValidName(version) {
		return false, fmt.Errorf("%w: bad name %q/%q", ErrNotFound, db, version)
	}
	return r.exists(ctx, r.prefix+db+"/"+version+"/"+SuccessFile)
}

// Pin reads <prefix>/<db>/_PIN with one GET; a missing object is no
// marker.
func (r *s3root) Pin(ctx context.Context, db string) (string, error) {
	return readPin(ctx, db, func(ctx context.Context) (io.ReadCloser, error) {
		return r.openObject(ctx, r.prefix+db+"/"+PinFile)
	})
}

// Marker reads <prefix>/<db>/<name> with one GET; a missing object is no
// marker.
func (r *s3root) Marker(ctx context.Context, db, name string) ([]byte, error) {
	return readMarker(ctx, db, name, func(ctx context.Context) (io.ReadCloser, error) {
		return r.openObject(ctx, r.prefix+db+"/"+name)
	})
}

// exists reports whether the object key is there.
func (r *s3root) exists(ctx context.Context, key string) (bool, error) {
	r.metrics.lists.Inc()
	_, err := r.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(r.bucket), Key: aws.String(key)})
	if err == nil {
		return true, nil
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err = r.fail("checking "+key, err); errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return false, err
}

func (r *s3root) Files(ctx context.Context, db, version string) ([]File, error) {
	if !ValidName(db) || !ValidName(version) {
		return nil, fmt.Errorf("%w: bad name %q/%q", ErrNotFound, db, version)
	}
	_, objs, found, err := r.list(ctx, r.prefix+db+"/"+version+"/")
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%w: %s/%s", ErrNotFound, db, version)
	}
	files := objs[:0]
	for _, f := range objs {
		if !Hidden(f.Name) {
			files = append(files, f)
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

func (r *s3root) Open(ctx context.Context, db, version, name string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !ValidName(db) || !ValidName(version) || Hidden(name) || name == "" || path.Base(name) != name ||
		strings.HasSuffix(name, folderSuffix) {
		return nil, fmt.Errorf("%w: bad file %q/%q/%q", ErrNotFound, db, version, name)
	}
	return r.openObject(ctx, r.prefix+db+"/"+version+"/"+name)
}

// dedup drops repeated names from a sorted-or-not list (a listing that
// spans pages never repeats a prefix, but a store that does must not make
// a version count twice).
func dedup(names []string) []string {
	seen := make(map[string]bool, len(names))
	out := names[:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
