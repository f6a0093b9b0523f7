package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// ErrChanged is returned when an object changes while it is read: its
// ETag (or size or modification time) differs from what the first request
// saw. The load fails; the next refresh tries again.
var ErrChanged = errors.New("source: object changed during the load")

// maxBackoff bounds the pause between resumptions.
const maxBackoff = 5 * time.Second

// objectReader streams one object. A connection dropped mid-object is
// resumed with a ranged GET from the byte reached, pinned to the ETag the
// first answer gave, at most Retries times in a row without progress.
// It is not safe for concurrent use (an io.Reader).
type objectReader struct {
	r     *s3root
	ctx   context.Context
	key   string
	etag  string
	mtime time.Time
	size  int64
	off   int64
	body  io.ReadCloser // nil between a drop and the resumption
	fails int           // resumptions in a row without a byte read
	last  error         // why the last attempt failed
	done  bool
}

func (r *s3root) openObject(ctx context.Context, key string) (io.ReadCloser, error) {
	out, err := r.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(r.bucket), Key: aws.String(key)})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, r.fail("reading "+key, err)
	}
	o := &objectReader{r: r, ctx: ctx, key: key, etag: aws.ToString(out.ETag), size: aws.ToInt64(out.ContentLength), body: out.Body}
	if out.LastModified != nil {
		o.mtime = *out.LastModified
	}
	return o, nil
}

func (o *objectReader) Read(p []byte) (int, error) {
	if o.done {
		return 0, io.EOF
	}
	for {
		if o.body == nil {
			if err := o.resume(); err != nil {
				return 0, err
			}
		}
		n, err := o.body.Read(p)
		o.off += int64(n)
		o.r.metrics.bytes.Add(float64(n))
		if n > 0 {
			o.fails = 0
		}
		switch {
		case err == nil:
			return n, nil
		case o.off >= o.size:
			if err == io.EOF {
				o.done = true
				o.r.metrics.objects.Inc()
			}
			return n, err
		case o.ctx.Err() != nil:
			return n, o.ctx.Err()
		}
		// The connection dropped before the end: resume from o.off on
		// the next call (or now, if nothing was read).
		o.body.Close()
		o.body = nil
		o.last = err
		if n > 0 {
			return n, nil
		}
	}
}

// resume opens the rest of the object from o.off, with backoff, until it
// succeeds, the retries run out, or the object turns out to have changed.
func (o *objectReader) resume() error {
	for {
		if o.fails >= o.r.opts.S3.Retries {
			return fmt.Errorf("%w: s3 bucket %q: reading %s: gave up after %d attempts at byte %d of %d: %w",
				ErrUnavailable, o.r.bucket, o.key, o.fails, o.off, o.size, o.last)
		}
		backoff := o.r.opts.S3.Backoff
		for i := 0; i < o.fails && backoff < maxBackoff; i++ {
			backoff *= 2
		}
		backoff = min(backoff, maxBackoff)
		o.fails++
		o.r.metrics.retries.Inc()
		select {
		case <-o.ctx.Done():
			return o.ctx.Err()
		case <-time.After(backoff):
		}
		in := &s3.GetObjectInput{Bucket: aws.String(o.r.bucket), Key: aws.String(o.key),
			Range: aws.String("bytes=" + strconv.FormatInt(o.off, 10) + "-")}
		if o.etag != "" {
			in.IfMatch = aws.String(o.etag)
		}
		out, err := o.r.client.GetObject(o.ctx, in)
		if err != nil {
			if o.ctx.Err() != nil {
				return o.ctx.Err()
			}
			switch code := errorCode(err); code {
			case "PreconditionFailed":
				o.r.metrics.errors.WithLabelValues(code).Inc()
				return fmt.Errorf("%w: s3://%s/%s: its ETag is no longer %s", ErrChanged, o.r.bucket, o.key, o.etag)
			case "network", "InternalError", "ServiceUnavailable", "SlowDown", "RequestTimeout":
				o.r.metrics.errors.WithLabelValues(code).Inc()
				o.last = err
				continue
			default:
				return o.r.fail("resuming "+o.key, err)
			}
		}
		if err := o.check(out); err != nil {
			out.Body.Close()
			return err
		}
		o.body = out.Body
		return nil
	}
}

// check makes sure a resumed answer is the rest of the same object.
func (o *objectReader) check(out *s3.GetObjectOutput) error {
	changed := func(what string) error {
		o.r.metrics.errors.WithLabelValues("Changed").Inc()
		return fmt.Errorf("%w: s3://%s/%s: %s", ErrChanged, o.r.bucket, o.key, what)
	}
	if etag := aws.ToString(out.ETag); etag != o.etag {
		return changed(fmt.Sprintf("ETag %s, now %s", o.etag, etag))
	}
	if out.LastModified != nil && !o.mtime.IsZero() && !out.LastModified.Equal(o.mtime) {
		return changed(fmt.Sprintf("modified at %s, now at %s", o.mtime.UTC().Format(time.RFC3339), out.LastModified.UTC().Format(time.RFC3339)))
	}
	// Content-Range: bytes <first>-<last>/<size>
	cr := aws.ToString(out.ContentRange)
	first, total := int64(-1), int64(-1)
	if rng, tot, ok := strings.Cut(strings.TrimPrefix(cr, "bytes "), "/"); ok {
		total, _ = strconv.ParseInt(tot, 10, 64)
		f, _, _ := strings.Cut(rng, "-")
		first, _ = strconv.ParseInt(f, 10, 64)
	}
	if total != o.size {
		return changed(fmt.Sprintf("%d bytes, now Content-Range %q", o.size, cr))
	}
	if first != o.off {
		return fmt.Errorf("%w: s3 bucket %q: resuming %s at byte %d: the answer starts at %q", ErrUnavailable, o.r.bucket, o.key, o.off, cr)
	}
	return nil
}

func (o *objectReader) Close() error {
	o.done = true
	if o.body == nil {
		return nil
	}
	err := o.body.Close()
	o.body = nil
	return err
}
